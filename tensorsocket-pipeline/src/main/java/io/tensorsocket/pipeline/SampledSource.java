package io.tensorsocket.pipeline;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.IndexedSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
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
    private ParallelSlotFiller.SampleWriter<C> writer;
    private int workers;
    private int prefetch;
    /** The main stream's workers, started with the source. */
    private ParallelSlotFiller<C> filler;
    /** Workers of lanes that ended, kept for the next: a lane gets a pipeline of its own, as a private loader would. */
    private final ArrayDeque<ParallelSlotFiller<C>> idle = new ArrayDeque<>();

    private final List<ParallelSlotFiller<C>> started = new ArrayList<>();
    private boolean mainBusy;

    SampledSource(EpochSampler sampler, BatchLayout layout) {
        this.sampler = sampler;
        this.layout = layout;
    }

    /** Starts {@code workers} threads writing samples with {@code writer}, up to {@code prefetch} batches ahead. */
    final void startWorkers(ParallelSlotFiller.SampleWriter<C> writer, int workers, int prefetch) {
        this.writer = writer;
        this.workers = workers;
        this.prefetch = prefetch;
        this.filler = new ParallelSlotFiller<>(writer, workers, prefetch);
        started.add(filler);
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
    public final OptionalLong shuffleSeed() {
        return OptionalLong.of(sampler.seed());
    }

    @Override
    public final SplittableRandom shuffleRandom(long epoch) {
        return Seeds.forEpoch(sampler.seed(), epoch);
    }

    /**
     * Yes: a call made while another runs (a producer's lane beside its main stream) gets workers of its own, as many as
     * the main stream's, so a lane costs what a private loader would and takes nothing from the others; both read the
     * same cache. Workers of a lane that ended wait for the next.
     */
    @Override
    public final boolean loadsConcurrently() {
        return true;
    }

    @Override
    public final void emitEpoch(long epoch, int[] order, BatchSink sink) throws Exception {
        ParallelSlotFiller<C> f = take();
        try {
            f.emit(epoch, order, layout.batchSize(), sink);
        } finally {
            giveBack(f);
        }
        if (f == filler) {
            epochEmitted(epoch);
        }
    }

    private synchronized ParallelSlotFiller<C> take() {
        if (!mainBusy) {
            mainBusy = true;
            return filler;
        }
        ParallelSlotFiller<C> f = idle.pollFirst();
        if (f == null) {
            f = new ParallelSlotFiller<>(writer, workers, prefetch);
            started.add(f);
        }
        return f;
    }

    private synchronized void giveBack(ParallelSlotFiller<C> f) {
        if (f == filler) {
            mainBusy = false;
        } else {
            idle.addFirst(f);
        }
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
        List<ParallelSlotFiller<C>> all;
        synchronized (this) {
            all = List.copyOf(started);
        }
        all.forEach(ParallelSlotFiller::close);
    }
}
