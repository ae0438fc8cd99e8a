package io.tensorsocket;

import io.tensorsocket.producer.IterableSource;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.function.LongFunction;

/**
 * Where a producer's batches come from: for epoch {@code e} it emits that epoch's batches, in order,
 * into a {@link BatchSink}, so it can reshuffle per epoch. Every epoch holds exactly
 * {@link #samplesPerEpoch()} samples; the producer checks this and reports a source that breaks it as
 * a loader failure.
 *
 * <p>A source either hands finished batches to {@link BatchSink#put(Batch)} (one copy into shared
 * memory, works for any loader) or claims a slot with {@link BatchSink#claim()} and writes samples
 * straight into it (no copy).
 */
public interface BatchSource extends AutoCloseable {

    /** Longest {@link #description()} the control protocol carries, in UTF-8 bytes. */
    int MAX_DESCRIPTION_BYTES = 4096;

    /** The tensors of every batch and the loader's batch size. */
    BatchLayout layout();

    /** Samples in one epoch. */
    long samplesPerEpoch();

    /**
     * Emits epoch {@code epoch}'s batches into {@code sink}, in order, then returns. An exception
     * thrown here reaches every consumer as a {@link ProducerFailedException} naming it.
     */
    void emitEpoch(long epoch, BatchSink sink) throws Exception;

    /**
     * A short description consumers receive (at most {@link #MAX_DESCRIPTION_BYTES} UTF-8 bytes). Sources whose samples a consumer can
     * recompute, like the synthetic one, put their parameters here.
     */
    default String description() {
        return getClass().getSimpleName();
    }

    /**
     * Called once the producer holds its directory and before it reads {@link #layout()}: a source whose
     * layout is declared by another process (an external feeder) waits for that declaration here, bounded.
     * Most sources know their layout at once and do nothing.
     */
    default void awaitLayout(Path producerDirectory) throws IOException, InterruptedException {}

    /**
     * Epochs to serve when the source decides them (an external feeder declares its own); otherwise
     * {@code requested}, the producer's setting.
     */
    default long epochs(long requested) {
        return requested;
    }

    /**
     * The number of the first epoch this source emits: 0, except for a source that joins a stream already under
     * way and numbers its epochs as that stream does (a relay of a remote producer). The producer then serves
     * epochs {@code firstEpoch()}, {@code firstEpoch() + 1}, ..., and {@link #epochs(long)} counts from it.
     */
    default long firstEpoch() {
        return 0;
    }

    /**
     * This source as one that loads samples by index, so the producer chooses its order and consumers joining
     * mid-epoch get exact epochs; or null: it fixes its own order, and they roll. The producer asks once the layout
     * is known ({@link #awaitLayout}): a source fed by another process learns only then whether it can.
     */
    default IndexedSource byIndex() {
        return null;
    }

    /**
     * What this source's decoded-sample cache holds and did, for {@code status} and the metrics; {@link
     * ProducerStatus.Cache#NONE} (the default) where it keeps none. Called from any thread, at any time.
     */
    default ProducerStatus.Cache cacheFigures() {
        return ProducerStatus.Cache.NONE;
    }

    /**
     * Bytes of the arena's file system ({@code /dev/shm}) the source's own processes need beside the arena, known once
     * its {@link #layout()} is: a PyTorch feeder's DataLoader workers hand their batches over there. The arena's default
     * size leaves them that; 0 unless the source says.
     */
    default long sharedMemoryReserve() {
        return 0;
    }

    /**
     * The process whose CPU loads the source's samples, known once its {@link #layout()} is: the producer's own, or an
     * external feeder's (its loader's workers are its children). A lane's cost is measured there. Default: this
     * process.
     */
    default long loaderPid() {
        return ProcessHandle.current().pid();
    }

    /**
     * The producer has no consumer attached any more (they read and left) and waits for one before it takes the next
     * batch: a source that loads ahead may stop loading meanwhile, and load on when asked for the batch. Called on the
     * producer thread, inside the wait for a slot this source asked for. Default: nothing.
     */
    default void paused() {}

    @Override
    default void close() throws Exception {}

    /**
     * Closes a source whose producer failed before it served, saying why: a source with a party of its own (an
     * external producer's feeder) passes {@code reason} on, so that the party reports the producer's failure rather
     * than a closed connection. Default: {@link #close()}.
     */
    default void abandon(String reason) throws Exception {
        close();
    }

    /**
     * Wraps any loader: {@code epochs.apply(e)} returns the batches of epoch {@code e}. The layout is
     * taken from the first batch of epoch 0.
     */
    static BatchSource fromIterable(LongFunction<? extends Iterable<Batch>> epochs, long samplesPerEpoch) {
        return new IterableSource(epochs, samplesPerEpoch);
    }

    /** Wraps a loader given as one iterator per epoch: {@code epochs.apply(e)} iterates epoch {@code e}. */
    static BatchSource fromIterators(LongFunction<? extends Iterator<Batch>> epochs, long samplesPerEpoch) {
        return new IterableSource(
                e -> () -> {
                    @SuppressWarnings("unchecked")
                    Iterator<Batch> it = (Iterator<Batch>) epochs.apply(e);
                    return it;
                },
                samplesPerEpoch);
    }

    /** Wraps a loader that yields the same sequence every epoch (for example one that shuffles itself). */
    static BatchSource fromIterable(Iterable<Batch> loader, long samplesPerEpoch) {
        return new IterableSource(e -> loader, samplesPerEpoch);
    }
}
