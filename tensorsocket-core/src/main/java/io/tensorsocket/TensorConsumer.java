package io.tensorsocket;

import io.tensorsocket.consumer.LocalEngine;
import io.tensorsocket.consumer.ProgressMeter;
import io.tensorsocket.consumer.SharedServe;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.spi.ConsumerEngine;
import io.tensorsocket.spi.ConsumerFacade;
import io.tensorsocket.spi.RemoteConnector;
import io.tensorsocket.spi.StreamTerms;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Reads the batches of a running {@link TensorProducer}, at this consumer's own batch size, from shared
 * memory.
 *
 * <pre>{@code
 * try (TensorConsumer c = TensorConsumer.connect("cifar", ConsumerOptions.batchSize(64))) {
 *     for (int e = 0; e < 10; e++) {
 *         for (Batch b : c) train(b.tensor("data"), b.tensor("label"));   // one epoch, then the loop ends
 *     }
 * }
 * }</pre>
 *
 * <p>Each {@code for} loop over the consumer yields one epoch: every sample exactly once, in the
 * producer's order, the last short batch included unless {@link ConsumerOptions#dropLast()}. A batch
 * that lies inside one arena slot is a zero-copy view; one that spans slots is gathered into a buffer
 * this consumer owns. A batch is valid until the next one is requested or it is closed. When the consumer
 * had to wait for the next batch, the producer learns of the previous one's release at the consumer's
 * following call (or before it waits again), so that nothing but the batch itself lies between the awaited
 * batch's arrival and its handing out.
 *
 * <p>A name of the form {@code grpc://HOST:PORT/NAME} (or {@code grpc+tls://}) reaches a producer on
 * another host served over Arrow Flight ({@code tensorsocket serve --flight}), with the same contract;
 * that needs the {@code tensorsocket-flight} module on the class path, and each batch is then a view of
 * the received network buffers.
 *
 * <p>Not for concurrent iteration: one thread iterates; {@link Batch#close()} may be called from any, and
 * {@link #close()} from any, ending a wait in progress.
 *
 * <p>Mechanism: a façade over one {@link ConsumerEngine}, chosen when the consumer connects (shared memory
 * for a local name, the connector of a URI's scheme otherwise); the façade times the calls and reports where
 * the consumer's time goes.
 */
public final class TensorConsumer implements Iterable<Batch>, AutoCloseable {
    private ConsumerEngine engine;
    private StreamTerms terms;
    /** Where a local consumer's producer is (it reconnects after a resumed epoch), or null for a remote one. */
    private final Path dir;

    private final ConsumerOptions options;
    private final ReentrantLock lock = new ReentrantLock();
    private final ProgressMeter meter = new ProgressMeter();
    private final String producer;
    private boolean closed;

    static {
        ConsumerFacade.install(TensorConsumer::new);
    }

    /** The façade over {@code engine}; {@link ConsumerFacade} reaches it for other modules' engines. */
    private TensorConsumer(String producer, ConsumerEngine engine) {
        this(producer, engine, null, null);
    }

    private TensorConsumer(String producer, ConsumerEngine engine, Path dir, ConsumerOptions options) {
        this.engine = engine;
        this.terms = engine.terms();
        this.producer = producer;
        this.dir = dir;
        this.options = options;
    }

    /**
     * Connects to the producer called {@code name} (see {@link TensorProducer.Builder#name(String)}), or,
     * for {@code grpc://HOST:PORT/NAME} or {@code grpc+tls://HOST:PORT/NAME}, to a producer served over
     * Arrow Flight on another host.
     *
     * @throws IllegalStateException for a URI whose scheme no module on the class path handles (add
     *                               {@code tensorsocket-flight} for {@code grpc://})
     */
    public static TensorConsumer connect(String name, ConsumerOptions options) {
        if (name.indexOf("://") > 0) {
            return new TensorConsumer(name, RemoteConnector.forUri(name).connect(name, options));
        }
        return connect(ProducerDirectory.forName(name), name, options);
    }

    /** How long a producer a share started stays after its last consumer left, unless told otherwise. */
    public static final Duration DEFAULT_LINGER = Duration.ofSeconds(60);

    /**
     * Connects to the producer called {@code name}, first starting it as {@code tensorsocket serve --name name
     * serveArgs...} if none runs on this host: the way every trial of a sweep shares one loader with the same line.
     * The producer runs as a process of its own (the caller's end does not stop it) and stays {@code linger} after
     * its last consumer left; callers racing at the same instant start one. A running producer that was started
     * otherwise, or with other arguments, is refused ({@link RequestRejectedException}, saying how they differ).
     *
     * @param serveArgs what {@code serve} needs besides the name, e.g. {@code --idx /data/fmnist --batch-size 256}
     */
    public static TensorConsumer connectOrServe(
            String name, ConsumerOptions options, List<String> serveArgs, Duration linger) {
        SharedServe share = new SharedServe(name, serveArgs, linger);
        for (int attempt = 0; ; attempt++) {
            share.ensureStarted(options.connectTimeout());
            TensorConsumer c;
            try {
                c = connect(name, options);
            } catch (ProducerGoneException | ProducerNotFoundException e) {
                if (attempt == 2) {
                    throw e; // it stopped (its linger ran out) between the check and the join, three times over
                }
                continue;
            }
            String why = share.mismatch(ProducerDirectory.forName(name), c.sourceDescription());
            if (why != null) {
                c.close();
                throw new RequestRejectedException("producer '" + name + "' on this host serves another source than"
                        + " this caller asks for: " + why + ". Give this share another name, or the same arguments");
            }
            return c;
        }
    }

    /** Connects to the producer whose directory is {@code directory}. */
    public static TensorConsumer connect(Path directory, ConsumerOptions options) {
        return connect(directory, directory.getFileName().toString(), options);
    }

    private static TensorConsumer connect(Path dir, String name, ConsumerOptions options) {
        return new TensorConsumer(name, LocalEngine.join(dir, name, options), dir, options);
    }

    // ------------------------------------------------------------------------------------------------ checkpoints

    /**
     * Where this consumer stands, for a training checkpoint: see {@link ConsumerState}. It describes the next batch to
     * come.
     *
     * @throws UnsupportedOperationException for a consumer of a producer on another host
     */
    public ConsumerState state() {
        lock.lock();
        try {
            checkOpen();
            return local().state();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Continues the epoch {@code state} was taken in: the next iteration hands out every sample of it not read before
     * the state was taken, once, loaded again by index, then whole epochs follow. Call it before iterating.
     *
     * @throws IllegalArgumentException  where the state is another consumer's (producer, batch size, rank)
     * @throws IllegalStateException     after iterating
     * @throws RequestRejectedException  where the producer cannot load the rest (another data set or seed, a source
     *                                   that fixes its own order), saying which
     */
    public void resume(ConsumerState state) {
        lock.lock();
        try {
            checkOpen();
            LocalEngine current = local();
            if (current.epoch() != terms.startEpoch() || current.state().handed() > 0 || meter.samples() > 0) {
                throw new IllegalStateException(
                        "resume() continues an epoch from a checkpoint: call it before" + " iterating");
            }
            LocalEngine resumed = LocalEngine.resume(dir, producer, options, state);
            if (resumed != null) {
                current.close();
                engine = resumed;
                terms = resumed.terms();
            }
        } finally {
            lock.unlock();
        }
    }

    private LocalEngine local() {
        if (engine instanceof LocalEngine l) {
            return l;
        }
        throw new UnsupportedOperationException("checkpoints are for consumers on the producer's host");
    }

    // ------------------------------------------------------------------------------------------------ info

    /** Batches in one epoch at this consumer's batch size. */
    public long size() {
        return terms.batchesPerEpoch();
    }

    /** Samples in one of this consumer's epochs: the producer's epoch, or a rank's share of it. */
    public long samplesPerEpoch() {
        return terms.samplesPerEpoch();
    }

    /** This consumer's batch size. */
    public int batchSize() {
        return terms.batchSize();
    }

    /** The producer's (loader's) batch size. */
    public int producerBatchSize() {
        return terms.producerBatchSize();
    }

    /**
     * The epoch being iterated, or about to be: the producer's epoch number for a consumer that started at
     * an epoch start; for one that joined mid-epoch, the producer epoch it joined in, plus one per finished epoch.
     */
    public long epoch() {
        return engine.epoch();
    }

    /**
     * Whether this consumer started at an epoch start or mid-epoch. With
     * {@link StartPolicy#NEXT_EPOCH_START} it is always an epoch start; {@link #startEpoch()} says whether it
     * was the current epoch's (within the rubber band) or the next one's.
     */
    public StartMode startMode() {
        return terms.startMode();
    }

    /** The id the producer gave this consumer, as its status lists it; -1 for a remote consumer whose server gave none. */
    public int consumerId() {
        return terms.consumerId();
    }

    /**
     * How any consumer joining this producer mid-epoch starts: {@link StartMode#EXACT} where the producer chooses the
     * sample order (its source loads samples by index, {@link IndexedSource}), so every consumer's every epoch is one
     * pass over the data set wherever it joined; {@link StartMode#ROLLING} where the source fixes its own order.
     */
    public StartMode midEpochStart() {
        return terms.midEpochStart();
    }

    /** How batches reach this consumer: {@code ring} (a descriptor ring in shared memory, see
     * {@link ConsumerOptions#ringHandoff()}), {@code socket} (announced over its socket) or {@code flight}. */
    public String handoff() {
        return terms.handoff();
    }

    /** Whether batches reach this consumer through a descriptor ring in shared memory: {@link #handoff()} is {@code ring}. */
    public boolean ringHandoff() {
        return handoff().equals("ring");
    }

    /** The producer epoch in which this consumer's first epoch begins. */
    public long startEpoch() {
        return terms.startEpoch();
    }

    /** The sample position, in {@link #startEpoch()}, where this consumer's first epoch begins (0 at an epoch start). */
    public long startSample() {
        return terms.startSample();
    }

    /**
     * Position in the producer's stream (producer epoch × samples per epoch + sample) of a batch's first
     * sample: where the producer emitted it.
     */
    public long streamPosition(Batch batch) {
        return engine.streamPosition(batch);
    }

    /**
     * Position in the producer's stream of sample {@code sample} of a batch: {@code streamPosition(batch) + sample} for
     * a consumer that takes whole epochs; a rank of a job takes every {@code worldSize}-th position.
     */
    public long streamPosition(Batch batch, int sample) {
        return engine.streamPosition(batch, sample);
    }

    /** This consumer's rank in a data-parallel job ({@link ConsumerOptions#withRank}), or null if it is none. */
    public JobRank jobRank() {
        return terms.jobRank();
    }

    /** Tensors of every batch, in order, with their per-sample shapes. */
    public List<TensorSpec> tensors() {
        return terms.tensors();
    }

    /** The source's description as the producer gave it (for a synthetic source, its parameters). */
    public String sourceDescription() {
        return terms.sourceDescription();
    }

    /** Epochs the producer runs (0 = unbounded). */
    public long producerEpochs() {
        return terms.producerEpochs();
    }

    /** Whether the producer's stream has ended and every batch of it was handed out. */
    public boolean isEndOfStream() {
        lock.lock();
        try {
            return engine.isEndOfStream();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------ iteration

    /**
     * Iterates the next epoch. If the previous epoch was left unfinished, its remaining samples are
     * skipped first.
     */
    @Override
    public Iterator<Batch> iterator() {
        Iterator<Batch> epoch = timed(() -> {
            if (engine instanceof LocalEngine l && l.resumedEpochBegun()) {
                // the resumed epoch is over: read on as a consumer that joins now
                l.close();
                engine = LocalEngine.join(dir, producer, options);
                terms = engine.terms();
            }
            return engine.iterator();
        });
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return timed(epoch::hasNext);
            }

            @Override
            public Batch next() {
                return timed(() -> {
                    Batch b = epoch.next();
                    meter.handed(b.size());
                    return b;
                });
            }
        };
    }

    /**
     * Runs one call under the lock, counting its time as waiting and the time since the previous call as
     * work, for {@link #waitNanos()}, {@link #workNanos()} and the producer's status.
     */
    private <T> T timed(Supplier<T> call) {
        lock.lock();
        long entered = meter.enter();
        try {
            checkOpen();
            if (meter.reportDue(entered)) {
                engine.reportProgress(engine.epoch(), meter.samples(), meter.waitNanos(), meter.workNanos());
            }
            return call.get();
        } finally {
            meter.leave(entered);
            lock.unlock();
        }
    }

    /**
     * Time this consumer's iterator spent waiting for data (inside {@code hasNext}/{@code next}), in
     * nanoseconds since it connected. With {@link #workNanos()} it says whether the loader or the
     * training loop is the bottleneck; the producer's status shows both.
     */
    public long waitNanos() {
        return metered(meter::waitNanos);
    }

    /** Time spent outside the iterator between batches (the caller's work), in nanoseconds. */
    public long workNanos() {
        return metered(meter::workNanos);
    }

    /** Samples handed out so far, over all epochs. */
    public long samplesConsumed() {
        return metered(meter::samples);
    }

    private long metered(LongSupplier figure) {
        lock.lock();
        try {
            return figure.getAsLong();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this consumer of producer '" + producer + "' is closed");
        }
    }

    /**
     * Leaves the producer: the current batch is released and the producer frees everything this consumer
     * held. Idempotent; from another thread, it ends the iterating thread's wait first.
     */
    @Override
    public void close() {
        if (!lock.tryLock()) {
            engine.abortWait(); // another thread waits in next(), holding the lock: end its wait, not ours
            lock.lock();
        }
        try {
            if (!closed) {
                closed = true;
                engine.close();
            }
        } finally {
            lock.unlock();
        }
    }
}
