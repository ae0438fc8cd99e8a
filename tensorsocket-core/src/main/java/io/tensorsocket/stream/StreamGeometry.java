package io.tensorsocket.stream;

/**
 * The shape of a producer's stream: samples per epoch and the loader's batch size. A stream position
 * counts samples from the start of epoch 0: {@code epoch × samplesPerEpoch + sample}.
 */
public record StreamGeometry(long samplesPerEpoch, int producerBatchSize) {

    public StreamGeometry {
        if (samplesPerEpoch < 1 || producerBatchSize < 1) {
            throw new IllegalArgumentException("a stream needs at least one sample per epoch and per batch, not "
                    + samplesPerEpoch + " and " + producerBatchSize);
        }
    }

    /** The stream position of {@code sample} in {@code epoch}. */
    public long position(long epoch, long sample) {
        return epoch * samplesPerEpoch + sample;
    }

    /** The epoch a stream position lies in. */
    public long epochOf(long position) {
        return position / samplesPerEpoch;
    }

    /** Producer batches in one epoch, the short last one included. */
    public long batchesPerEpoch() {
        return (samplesPerEpoch + producerBatchSize - 1) / producerBatchSize;
    }

    /**
     * Slots a consumer batch of {@code consumerBatch} samples may hold at once: the full producer batches it
     * touches, plus one for an epoch's short last batch when a rolling epoch crosses the producer's epoch
     * boundary. The slowest consumer can always progress if this is at most {@code slots - claimsAhead + 1}.
     */
    public int slotsNeeded(int consumerBatch) {
        int b = producerBatchSize;
        return (int) Math.min(Integer.MAX_VALUE, (consumerBatch - 1L + b - 1) / b + 2);
    }

    /** The largest consumer batch size that can never deadlock an arena of {@code slots} slots (see {@link #slotsNeeded}). */
    public int maxConsumerBatch(int slots, int claimsAhead) {
        long b = (long) (slots - claimsAhead - 1) * producerBatchSize + 1;
        return (int) Math.min(Integer.MAX_VALUE, b);
    }
}
