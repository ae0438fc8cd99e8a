package io.tensorsocket.spi;

import io.tensorsocket.Batch;
import io.tensorsocket.JobRank;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSpec;
import java.util.Iterator;
import java.util.List;

/**
 * What a {@link io.tensorsocket.TensorConsumer} does, behind its façade: one engine per transport (shared
 * memory on this host, Arrow Flight from another), chosen once when the consumer connects. Each method has
 * the meaning of the {@code TensorConsumer} method of the same name: one epoch per {@link #iterator()},
 * every sample exactly once and in order, each batch valid until the next is asked for.
 *
 * <p>The façade calls an engine from one thread at a time (it holds its own lock), except
 * {@link #abortWait()}, which another thread calls to end a wait before closing; a batch's
 * {@link Batch#close()} may come from any thread, so an engine guards what a batch's release touches.
 */
public interface ConsumerEngine extends Iterable<Batch>, AutoCloseable {

    long size();

    long samplesPerEpoch();

    int batchSize();

    int producerBatchSize();

    long epoch();

    StartMode startMode();

    /** How any consumer joining this producer mid-epoch starts: {@link StartMode#EXACT} or {@link StartMode#ROLLING}. */
    StartMode midEpochStart();

    long startEpoch();

    long startSample();

    long streamPosition(Batch batch);

    /** Stream position of sample {@code sample} of {@code batch}: consecutive unless the consumer is a rank of a job. */
    default long streamPosition(Batch batch, int sample) {
        return streamPosition(batch) + sample;
    }

    /** The id the serving producer gave this consumer (the one its status lists), or -1 where it gave none. */
    default int consumerId() {
        return -1;
    }

    /** The consumer's rank in a job, or null. */
    default JobRank jobRank() {
        return null;
    }

    List<TensorSpec> tensors();

    String sourceDescription();

    long producerEpochs();

    boolean isEndOfStream();

    /** How batches reach this consumer: {@code ring}, {@code socket} or {@code flight}. */
    String handoff();

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
