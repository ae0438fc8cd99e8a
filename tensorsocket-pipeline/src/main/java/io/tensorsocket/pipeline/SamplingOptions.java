package io.tensorsocket.pipeline;

/**
 * The options every pipeline source shares: how samples are batched, ordered and spread over worker
 * threads. Defaults follow PyTorch's DataLoader where it has one.
 *
 * @param <B> the concrete builder, so setters chain
 */
public abstract class SamplingOptions<B extends SamplingOptions<B>> {
    int batchSize = 64;
    int workers;
    int prefetch = 2;
    long seed;
    boolean shuffle = true;
    boolean dropLast;

    SamplingOptions(int defaultWorkers) {
        this.workers = defaultWorkers;
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /** Samples per batch; default 64. */
    public B batchSize(int batchSize) {
        this.batchSize = batchSize;
        return self();
    }

    /** Threads writing samples into slots. */
    public B workers(int workers) {
        this.workers = workers;
        return self();
    }

    /**
     * Batches being filled at once (claims held); default 2, and never more than the producer's
     * claims-ahead limit.
     */
    public B prefetch(int prefetch) {
        this.prefetch = prefetch;
        return self();
    }

    /** Seed of shuffling and of any random augmentation; default 0. */
    public B seed(long seed) {
        this.seed = seed;
        return self();
    }

    /** Whether each epoch visits samples in a new random order; default true. */
    public B shuffle(boolean shuffle) {
        this.shuffle = shuffle;
        return self();
    }

    /** Whether to leave out the last partial batch of each epoch; default false. */
    public B dropLast(boolean dropLast) {
        this.dropLast = dropLast;
        return self();
    }

    /** The sampler these options describe, over {@code samples} samples. */
    EpochSampler sampler(int samples) {
        return new EpochSampler(samples, batchSize, shuffle, dropLast, seed);
    }
}
