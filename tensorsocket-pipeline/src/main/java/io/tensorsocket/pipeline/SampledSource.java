package io.tensorsocket.pipeline;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.IndexedSource;
import java.util.SplittableRandom;

/**
 * A source over a data set of numbered samples: epoch {@code e} visits them in the order the producer chooses
 * ({@link IndexedSource}; without consumers joining mid-epoch, {@link EpochSampler}'s), and worker threads ({@link ParallelSlotFiller}) write each sample straight into the arena slot it belongs to.
 * A subclass says what its batches hold and how one sample is written, and starts the workers once its own
 * state is set.
 *
 * @param <C> the per-worker state of the subclass's sample writer
 */
abstract class SampledSource<C> implements IndexedSource {
    private final EpochSampler sampler;
    private final BatchLayout layout;
    private ParallelSlotFiller<C> filler;

    SampledSource(EpochSampler sampler, BatchLayout layout) {
        this.sampler = sampler;
        this.layout = layout;
    }

    /** Starts {@code workers} threads writing samples with {@code writer}, up to {@code prefetch} batches ahead. */
    final void startWorkers(ParallelSlotFiller.SampleWriter<C> writer, int workers, int prefetch) {
        this.filler = new ParallelSlotFiller<>(writer, workers, prefetch);
    }

    @Override
    public final BatchLayout layout() {
        return layout;
    }

    @Override
    public final long samplesPerEpoch() {
        return sampler.samplesPerEpoch();
    }

    @Override
    public final int datasetSize() {
        return sampler.samples();
    }

    @Override
    public final boolean shuffles() {
        return sampler.shuffle();
    }

    @Override
    public final SplittableRandom shuffleRandom(long epoch) {
        return Seeds.forEpoch(sampler.seed(), epoch);
    }

    /**
     * Yes: each call keeps its own batches in flight on the shared workers, whose decoders and buffers are their own,
     * so a producer's lanes load beside its main stream (on the same workers, and from the same cache).
     */
    @Override
    public final boolean loadsConcurrently() {
        return true;
    }

    @Override
    public final void emitEpoch(long epoch, int[] order, BatchSink sink) throws Exception {
        filler.emit(epoch, order, layout.batchSize(), sink);
        epochEmitted(epoch);
    }

    /** Called once an epoch's last batch was handed over; a subclass says here what the epoch cost. */
    protected void epochEmitted(long epoch) {}

    /** The order in which epochs visit the samples. */
    public final EpochSampler sampler() {
        return sampler;
    }

    /** Stops the worker threads and frees what they hold. */
    @Override
    public void close() {
        filler.close();
    }
}
