package io.tensorsocket.pipeline;

import io.tensorsocket.stream.EpochOrders;

/**
 * The order in which an epoch visits samples: {@code 0..n-1}, or a permutation drawn from
 * (seed, epoch); with drop-last, the tail that would make a partial batch is left out, as PyTorch's
 * {@code DataLoader(drop_last=True)} does.
 */
public record EpochSampler(int samples, int batchSize, boolean shuffle, boolean dropLast, long seed) {
    public EpochSampler {
        if (samples < 1) {
            throw new IllegalArgumentException("the data set is empty; give a folder or file with at least one sample");
        }
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be at least 1, got " + batchSize);
        }
        if (dropLast && samples < batchSize) {
            throw new IllegalArgumentException("drop-last with batch size " + batchSize + " leaves nothing of "
                    + samples + " samples; use a smaller batch size or keep the last batch");
        }
    }

    /** Samples each epoch emits. */
    public int samplesPerEpoch() {
        return dropLast ? samples / batchSize * batchSize : samples;
    }

    /** Batches each epoch emits; all are full except perhaps the last. */
    public int batchesPerEpoch() {
        return (samplesPerEpoch() + batchSize - 1) / batchSize;
    }

    /**
     * Sample ids of epoch {@code epoch}, in emission order, when no consumer joined mid-epoch (the producer otherwise
     * keeps chunks of the previous epoch: {@link io.tensorsocket.IndexedSource}).
     */
    public int[] order(long epoch) {
        return EpochOrders.fresh(samples, samplesPerEpoch(), shuffle, Seeds.forEpoch(seed, epoch));
    }
}
