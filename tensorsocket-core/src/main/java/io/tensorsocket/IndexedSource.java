package io.tensorsocket;

import io.tensorsocket.stream.EpochOrders;
import java.util.OptionalLong;
import java.util.SplittableRandom;

/**
 * A source whose samples can be loaded by index (a data set of files, an IDX file, generated samples): the producer
 * chooses each epoch's order and the source loads the samples in that order. This is what gives a consumer that
 * joins mid-epoch exact epochs ({@link StartMode#EXACT}): the producer keeps the chunks that live consumers' join
 * offsets cut out of an epoch ({@code io.tensorsocket.stream.ChunkedShuffle}), so every consumer's every epoch is
 * one pass over the data set, while every batch is still loaded once and serves every consumer.
 *
 * <p>Served without a producer (or with no consumer joined mid-epoch), {@link #emitEpoch(long, BatchSink)} emits
 * the source's own order: a fresh shuffle of epoch {@code e} from {@link #shuffleRandom(long)}, or {@code 0..n-1}.
 */
public interface IndexedSource extends BatchSource {

    /** Samples in the data set: {@link #samplesPerEpoch()}, or more when drop-last leaves the tail of each epoch out. */
    int datasetSize();

    /** Whether epochs are shuffled; otherwise each visits {@code 0..datasetSize()-1} in order. */
    boolean shuffles();

    /** The randomness of epoch {@code epoch}'s shuffle, drawn from the source's seed so that the orders replay. */
    SplittableRandom shuffleRandom(long epoch);

    /** The seed its shuffles are drawn from, shown in the producer's status; empty where it does not say. */
    default OptionalLong shuffleSeed() {
        return OptionalLong.empty();
    }

    /**
     * Emits the samples {@code order[0], order[1], ...} ({@link #samplesPerEpoch()} distinct ids of the data set) as
     * epoch {@code epoch}'s batches, in that order, into {@code sink}, then returns.
     */
    void emitEpoch(long epoch, int[] order, BatchSink sink) throws Exception;

    /**
     * Whether {@link #emitEpoch(long, int[], BatchSink)} may run on two threads at once, each with its own sink: then a
     * producer can serve a consumer that fell behind from a lane of its own (see
     * {@link io.tensorsocket.TensorProducer.Builder#lanes(int)}). False unless the source says so.
     */
    default boolean loadsConcurrently() {
        return false;
    }

    /**
     * How many lanes it can load for at once beside the main stream, where it {@link #loadsConcurrently() loads
     * concurrently}: the producer runs no more (its own bound may be lower). Unbounded unless the source says so.
     */
    default int lanesAtMost() {
        return loadsConcurrently() ? Integer.MAX_VALUE : 0;
    }

    /**
     * No lane will load again: the producer's main stream ended, and so did its last lane. A source that keeps
     * something for its lanes' loads (connections, workers) lets it go; the producer may still serve what is loaded.
     */
    default void lanesDone() {}

    /** This source itself: it loads samples by index. */
    @Override
    default IndexedSource byIndex() {
        return this;
    }

    /** Emits epoch {@code epoch} in the source's own order. */
    @Override
    default void emitEpoch(long epoch, BatchSink sink) throws Exception {
        emitEpoch(epoch, EpochOrders.fresh(datasetSize(), samplesPerEpoch(), shuffles(), shuffleRandom(epoch)), sink);
    }
}
