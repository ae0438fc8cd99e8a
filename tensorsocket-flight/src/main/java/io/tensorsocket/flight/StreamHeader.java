package io.tensorsocket.flight;

import io.tensorsocket.StartMode;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a remote consumer learns when its stream starts, carried as the custom metadata of the stream's
 * Arrow schema (string keys and values, so {@code pyarrow}'s {@code schema.metadata} reads it as is):
 *
 * <pre>
 *   tensorsocket.version              "1"
 *   tensorsocket.samples_per_epoch    samples in one producer epoch
 *   tensorsocket.batch_size           this consumer's batch size
 *   tensorsocket.drop_last            "1" if each epoch's short last batch is dropped, else "0"
 *   tensorsocket.producer_batch_size  the loader's batch size
 *   tensorsocket.start_mode           "epoch_start", "exact" or "rolling"
 *   tensorsocket.start_epoch          producer epoch of the consumer's first sample
 *   tensorsocket.start_sample         position in that epoch of the consumer's first sample
 *   tensorsocket.producer_epochs      epochs the producer serves, 0 = until stopped
 *   tensorsocket.description          the source's description (e.g. "synthetic:...")
 *   tensorsocket.mid_epoch            how any consumer joining mid-epoch starts: "exact" or "rolling"
 *                                     (absent: "rolling", as servers before it)
 *   tensorsocket.consumer_id          the id the producer gave this stream's consumer (its status lists it),
 *                                     which a relay names in the boundary action (absent: -1, none)
 * </pre>
 *
 * @param samplesPerEpoch   samples in one epoch
 * @param batchSize         the consumer's batch size
 * @param dropLast          whether the short last batch of each epoch is dropped
 * @param producerBatchSize the loader's batch size
 * @param startMode         how the consumer's first epoch lines up with the producer's
 * @param startEpoch        producer epoch of the first sample
 * @param startSample       position in that epoch of the first sample
 * @param producerEpochs    epochs the producer serves (0: until stopped)
 * @param description       the source's description
 * @param midEpoch          how any consumer joining mid-epoch starts ({@link StartMode#EXACT} or {@link StartMode#ROLLING})
 * @param consumerId        the producer's id of the stream's consumer, or -1
 */
public record StreamHeader(
        long samplesPerEpoch,
        int batchSize,
        boolean dropLast,
        int producerBatchSize,
        StartMode startMode,
        long startEpoch,
        long startSample,
        long producerEpochs,
        String description,
        StartMode midEpoch,
        int consumerId) {

    private static final String P = "tensorsocket.";

    /** The schema metadata for this header. */
    public Map<String, String> toMetadata() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(P + "version", "1");
        m.put(P + "samples_per_epoch", Long.toString(samplesPerEpoch));
        m.put(P + "batch_size", Integer.toString(batchSize));
        m.put(P + "drop_last", dropLast ? "1" : "0");
        m.put(P + "producer_batch_size", Integer.toString(producerBatchSize));
        m.put(P + "start_mode", startMode.label());
        m.put(P + "start_epoch", Long.toString(startEpoch));
        m.put(P + "start_sample", Long.toString(startSample));
        m.put(P + "producer_epochs", Long.toString(producerEpochs));
        m.put(P + "description", description);
        m.put(P + "mid_epoch", midEpoch.label());
        if (consumerId >= 0) {
            m.put(P + "consumer_id", Integer.toString(consumerId));
        }
        return m;
    }

    /**
     * Reads a header from schema metadata.
     *
     * @throws IllegalArgumentException if a key is missing or malformed (the server speaks another protocol)
     */
    public static StreamHeader fromMetadata(Map<String, String> m) {
        if (m == null || !"1".equals(m.get(P + "version"))) {
            throw new IllegalArgumentException("the stream's schema carries no TensorSocket version 1 header"
                    + " (is the server a TensorSocket producer of this version?)");
        }
        StartMode sm = mode(get(m, "start_mode"));
        StartMode mid = mode(m.getOrDefault(P + "mid_epoch", StartMode.ROLLING.label()));
        if (mid == StartMode.EPOCH_START) {
            throw new IllegalArgumentException("the stream's header has a malformed " + P + "mid_epoch");
        }
        return new StreamHeader(
                num(m, "samples_per_epoch"),
                (int) num(m, "batch_size"),
                num(m, "drop_last") == 1,
                (int) num(m, "producer_batch_size"),
                sm,
                num(m, "start_epoch"),
                num(m, "start_sample"),
                num(m, "producer_epochs"),
                get(m, "description"),
                mid,
                m.containsKey(P + "consumer_id") ? (int) num(m, "consumer_id") : -1);
    }

    private static StartMode mode(String label) {
        for (StartMode s : StartMode.values()) {
            if (s.label().equals(label)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown start mode '" + label + "'");
    }

    private static String get(Map<String, String> m, String key) {
        String v = m.get(P + key);
        if (v == null) {
            throw new IllegalArgumentException("the stream's header lacks " + P + key);
        }
        return v;
    }

    private static long num(Map<String, String> m, String key) {
        try {
            return Long.parseLong(get(m, key));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the stream's header has a malformed " + P + key, e);
        }
    }
}
