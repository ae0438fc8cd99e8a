package io.tensorsocket.spi;

import io.tensorsocket.Batch;
import java.util.Iterator;

/**
 * What a {@link io.tensorsocket.TensorConsumer} does, behind its façade: one engine per transport (shared
 * memory on this host, Arrow Flight from another), chosen once when the consumer connects. What the stream is
 * comes once, as {@link StreamTerms}; each method has the meaning of the {@code TensorConsumer} method of the same name: one epoch per {@link #iterator()},
 * every sample exactly once and in order, each batch valid until the next is asked for.
 *
 * <p>The façade calls an engine from one thread at a time (it holds its own lock), except
 * {@link #abortWait()}, which another thread calls to end a wait before closing; a batch's
 * {@link Batch#close()} may come from any thread, so an engine guards what a batch's release touches.
 */
public interface ConsumerEngine extends Iterable<Batch>, AutoCloseable {

    /** What the stream is, as the producer said when this consumer joined; the same record every time. */
    StreamTerms terms();

    /**
     * The epoch being iterated, or about to be: the producer's epoch for a consumer that started at an epoch start;
     * for one that joined mid-epoch, the producer epoch it joined in, plus one per finished epoch.
     */
    long epoch();

    long streamPosition(Batch batch);

    /** Stream position of sample {@code sample} of {@code batch}: consecutive unless the consumer is a rank of a job. */
    default long streamPosition(Batch batch, int sample) {
        return streamPosition(batch) + sample;
    }

    boolean isEndOfStream();

    /** The next epoch's batches; an unfinished previous epoch's remaining samples are skipped first. */
    @Override
    Iterator<Batch> iterator();

    /**
     * Tells the producer where this consumer's time goes (its status shows it), about once a second;
     * an engine whose producer does not take such reports ignores it.
     */
    default void reportProgress(long epoch, long samples, long waitNanos, long workNanos) {}

    /** Ends a wait another thread is in, so that {@link #close()} can follow; does nothing if none. */
    default void abortWait() {}

    @Override
    void close();
}
