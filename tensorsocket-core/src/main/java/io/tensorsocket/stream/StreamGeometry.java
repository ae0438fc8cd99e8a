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

    /**
     * Epochs of its own a consumer that starts at stream position {@code start} gets from a stream of {@code epochs}
     * epochs: every one that begins inside the stream, whole (0 for an endless stream: unbounded, so
     * {@link Long#MAX_VALUE}).
     */
    public long epochsOwed(long start, long epochs) {
        if (epochs <= 0) {
            return Long.MAX_VALUE;
        }
        long left = epochs * samplesPerEpoch - start;
        return left <= 0 ? 0 : (left + samplesPerEpoch - 1) / samplesPerEpoch;
    }

    /**
     * Stream position just past the last epoch a consumer that starts at {@code start} is owed by a stream of {@code
     * epochs} epochs ({@link #epochsOwed}); {@link Long#MAX_VALUE} for an endless stream. For a consumer that started
     * at an epoch start it is the stream's end; for one that joined at sample {@code s} of an epoch its last epoch ends
     * {@code s} samples past the stream's end: the tail its producer completes by index.
     *
     * <pre>
     *  stream (2 epochs)   | e0 . . . . . . . . | e1 . . . . . . . . |
     *  joined at e0, s     |        [ its epoch 0 . . . . ][ its epoch 1 . . . . ][tail]
     *                                                                 ^ end     ^ its last epoch's end
     * </pre>
     */
    public long lastEpochEnd(long start, long epochs) {
        return epochs <= 0 ? Long.MAX_VALUE : start + epochsOwed(start, epochs) * samplesPerEpoch;
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
