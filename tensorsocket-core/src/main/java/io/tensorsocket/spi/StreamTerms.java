package io.tensorsocket.spi;

import io.tensorsocket.JobRank;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSpec;
import java.util.List;

/**
 * What a consumer's stream is, as its producer said when the consumer joined (a local producer's WELCOME, a remote
 * stream's header), fixed from then on. One record per consumer, made once by its engine
 * ({@link ConsumerEngine#terms()}), serves every getter of the façade; each component means what the
 * {@link io.tensorsocket.TensorConsumer} method of the same name documents ({@code batchesPerEpoch} is its
 * {@code size()}).
 *
 * @param consumerId the id the serving producer gave this consumer, or -1 where it gave none
 * @param jobRank    the consumer's rank in a data-parallel job, or null
 * @param handoff    how batches reach the consumer: {@code ring}, {@code socket} or {@code flight}
 */
public record StreamTerms(
        long batchesPerEpoch,
        long samplesPerEpoch,
        int batchSize,
        int producerBatchSize,
        StartMode startMode,
        StartMode midEpochStart,
        long startEpoch,
        long startSample,
        int consumerId,
        JobRank jobRank,
        List<TensorSpec> tensors,
        String sourceDescription,
        long producerEpochs,
        String handoff) {

    public StreamTerms {
        tensors = List.copyOf(tensors);
    }
}
