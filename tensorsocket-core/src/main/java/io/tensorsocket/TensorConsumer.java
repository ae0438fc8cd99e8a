package io.tensorsocket;

import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.ProducerDirectory;
import io.tensorsocket.arena.DescriptorRings;
import io.tensorsocket.arena.Futex;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.consumer.ConsumerLink;
import io.tensorsocket.consumer.ProducerSocket;
import io.tensorsocket.consumer.ProgressMeter;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.spi.RemoteConnector;
import io.tensorsocket.spi.RemoteStream;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.ConsumerStream;
import io.tensorsocket.stream.StreamGeometry;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.SocketChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.ServiceLoader;
import java.util.concurrent.locks.ReentrantLock;
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
 * that needs the {@code tensorsocket-flight} module on the class path (found through {@link
 * RemoteConnector}), and each batch is then a view of the received network buffers.
 *
 * <p>Not for concurrent iteration: one thread iterates; {@link Batch#close()} may be called from any.
 */
public final class TensorConsumer implements Iterable<Batch>, AutoCloseable {
    private final String producer;
    private final ConsumerOptions options;
    private final ConsumerLink link;
    private final Message.Welcome welcome;
    private final SharedArena arena;
    private final ArenaLayout layout;
    private final List<TensorSpec> specs;
    private final long[] sampleBytes;
    private final Arena gatherScope;
    private final MemorySegment[] gather;
    private final long samplesPerEpoch;
    private final int batchSize;
    private final ReentrantLock lock = new ReentrantLock();
    /** The remote consumer every call goes to, for a {@code grpc://} name; null for a local producer. */
    private final RemoteStream remote;

    /** Which producer batches this consumer holds and where its epochs lie: see {@link ConsumerStream}. */
    private final ConsumerStream stream;
    private Batch current;
    /**
     * The batch released by the latest {@code next()} of a batch this consumer had to wait for: its JDK
     * scope is closed, and its slot given back, at the consumer's next call (or before it waits, or before
     * the memory is reused), not while the awaited batch is handed out: see {@link #releaseConsumed()}.
     */
    private Lease retired;
    /** Whether the batch about to be handed out had to be waited for (the consumer is faster than the producer). */
    private boolean waitedForData;
    private boolean closed;
    private final ProgressMeter meter = new ProgressMeter();
    /** The protocol violation seen from the producer, if any: every later call reports it again. */
    private ProtocolException violation;

    private TensorConsumer(String producer, ConsumerOptions options, ConsumerLink link, Message.Welcome w, SharedArena arena) {
        this.producer = producer;
        this.options = options;
        this.remote = null;
        this.link = link;
        this.welcome = w;
        this.arena = arena;
        this.layout = arena.layout();
        this.specs = w.tensors();
        this.samplesPerEpoch = w.samplesPerEpoch();
        this.batchSize = options.batchSize();
        this.sampleBytes = specs.stream().mapToLong(TensorSpec::sampleBytes).toArray();
        this.gatherScope = Arena.ofShared();
        this.gather = new MemorySegment[specs.size()]; // allocated when a batch first spans slots
        this.stream = new ConsumerStream(new StreamGeometry(samplesPerEpoch, w.producerBatchSize()), w.slotCount(),
                batchSize, options.dropLast(), w.startEpoch(), w.startSample());
    }

    private TensorConsumer(String uri, ConsumerOptions options, RemoteStream remote) {
        this.producer = uri;
        this.options = options;
        this.remote = remote;
        this.link = null;
        this.welcome = null;
        this.arena = null;
        this.layout = null;
        this.specs = remote.tensors();
        this.sampleBytes = null;
        this.gatherScope = null;
        this.gather = null;
        this.samplesPerEpoch = remote.samplesPerEpoch();
        this.batchSize = remote.batchSize();
        this.stream = null;
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
        int colon = name.indexOf("://");
        if (colon > 0) {
            String scheme = name.substring(0, colon).toLowerCase(Locale.ROOT);
            RemoteConnector connector = connector(scheme, name);
            return new TensorConsumer(name, options, connector.connect(name, options));
        }
        return connect(ProducerDirectory.forName(name), name, options);
    }

    /**
     * A consumer that hands every call to {@code remote}, opened by a {@link RemoteConnector} with options
     * of its own (e.g. {@code io.tensorsocket.flight.RemoteConsumer} with a token in code). Closing the
     * returned consumer closes {@code remote}.
     */
    public static TensorConsumer of(RemoteStream remote, String address, ConsumerOptions options) {
        return new TensorConsumer(address, options, java.util.Objects.requireNonNull(remote, "remote"));
    }

    private static RemoteConnector connector(String scheme, String uri) {
        for (RemoteConnector c : ServiceLoader.load(RemoteConnector.class, TensorConsumer.class.getClassLoader())) {
            if (c.schemes().contains(scheme)) {
                return c;
            }
        }
        if (scheme.equals("grpc") || scheme.equals("grpc+tls")) {
            throw new IllegalStateException("'" + uri + "' is a remote producer, and reaching one needs the module"
                    + " tensorsocket-flight (io.tensorsocket:tensorsocket-flight) on the class path; add it as a dependency");
        }
        throw new IllegalArgumentException("'" + uri + "' has scheme '" + scheme + "', which no module on the class path"
                + " handles; a producer is named NAME (this host) or grpc://HOST:PORT/NAME (another host, with"
                + " tensorsocket-flight)");
    }

    /** Connects to the producer whose directory is {@code directory}. */
    public static TensorConsumer connect(Path directory, ConsumerOptions options) {
        return connect(directory, directory.getFileName().toString(), options);
    }

    private static TensorConsumer connect(Path dir, String name, ConsumerOptions options) {
        SocketChannel ch = ProducerSocket.connect(dir, name, options.connectTimeout());
        MessageChannel mc = new MessageChannel(ch);
        ConsumerLink link = new ConsumerLink(mc, name, options.liveness());
        link.spinWait(options.spinWait().toNanos());
        SharedArena arena = null;
        try {
            mc.send(new Message.Hello(options.batchSize(), options.dropLast(), ProcessHandle.current().pid(),
                    options.client() != null ? options.client() : ProcessHandle.current().info().command().orElse("java"),
                    options.startPolicy(), options.ringHandoff() && Futex.supported()));
            Message first = link.take(options.connectTimeout().toNanos(), "the answer to HELLO");
            if (!(first instanceof Message.Welcome w)) {
                throw new ProtocolException("producer '" + name + "' answered HELLO with " + first.getClass().getSimpleName());
            }
            link.producerPid(w.producerPid());
            ArenaLayout layout = announcedLayout(name, w);
            Path arenaPath = dir.resolve(ProducerDirectory.ARENA_FILE);
            if (!Path.of(w.arenaPath()).toAbsolutePath().normalize().equals(arenaPath.toAbsolutePath().normalize())) {
                throw new ProtocolException("producer '" + name + "' announced arena " + w.arenaPath() + " outside its directory " + dir);
            }
            if (layout.slotBytes() != w.slotBytes()) {
                throw new ProtocolException("producer '" + name + "' announced " + w.slotBytes() + "-byte slots where its layout needs "
                        + layout.slotBytes());
            }
            arena = SharedArena.openReadOnly(arenaPath, layout, w.sessionId());
            if (w.ring() != Message.Welcome.NO_RING) {
                link.handOffThrough(DescriptorRings.open(dir.resolve(ProducerDirectory.RINGS_FILE), w.sessionId()),
                        w.ring(), w.consumerId());
            }
            return new TensorConsumer(name, options, link, w, arena);
        } catch (IOException e) {
            // What the producer said before it went (an eviction, say) explains a vanished arena best.
            link.awaitReceiverEnd(500);
            link.close();
            if (arena != null) {
                arena.close();
            }
            link.check();
            if (e instanceof NoSuchFileException) {
                throw new ProducerGoneException("producer '" + name + "' went away while this consumer connected", e);
            }
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            link.close();
            if (arena != null) {
                arena.close();
            }
            throw e;
        }
    }

    /** The arena layout a WELCOME describes; impossible geometry is the producer's protocol error. */
    private static ArenaLayout announcedLayout(String name, Message.Welcome w) {
        try {
            ArenaLayout layout = ArenaLayout.of(new BatchLayout(w.tensors(), w.producerBatchSize()), w.slotCount());
            layout.fileBytes(); // overflows for geometry no address space holds
            return layout;
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new ProtocolException("producer '" + name + "' announced an impossible arena (" + w.slotCount() + " slots of "
                    + w.producerBatchSize() + " samples of " + w.tensors() + "): " + e.getMessage());
        }
    }

    // ------------------------------------------------------------------------------------------------ info

    /** Batches in one epoch at this consumer's batch size. */
    public long size() {
        if (remote != null) {
            return remote.size();
        }
        return stream.batchesPerEpoch();
    }

    /** Samples in one epoch. */
    public long samplesPerEpoch() {
        return samplesPerEpoch;
    }

    /** This consumer's batch size. */
    public int batchSize() {
        return batchSize;
    }

    /** The producer's (loader's) batch size. */
    public int producerBatchSize() {
        if (remote != null) {
            return remote.producerBatchSize();
        }
        return welcome.producerBatchSize();
    }

    /**
     * The epoch being iterated, or about to be: the producer's epoch number for a consumer that started at
     * an epoch start; for a rolling consumer, the producer epoch it joined in, plus one per finished epoch.
     */
    public long epoch() {
        if (remote != null) {
            return remote.epoch();
        }
        lock.lock();
        try {
            return stream.epoch();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Whether this consumer started at an epoch start or mid-epoch. With
     * {@link StartPolicy#NEXT_EPOCH_START} it is always an epoch start; {@link #startEpoch()} says whether it
     * was the current epoch's (within the rubber band) or the next one's.
     */
    public StartMode startMode() {
        if (remote != null) {
            return remote.startMode();
        }
        return welcome.startMode();
    }

    /**
     * Whether batches reach this consumer through a descriptor ring in shared memory (see
     * {@link ConsumerOptions#ringHandoff()}), rather than announced over its socket or served remotely.
     */
    public boolean ringHandoff() {
        return remote == null && link.ringHandoff();
    }

    /** The producer epoch in which this consumer's first epoch begins. */
    public long startEpoch() {
        if (remote != null) {
            return remote.startEpoch();
        }
        return welcome.startEpoch();
    }

    /** The sample position, in {@link #startEpoch()}, where this consumer's first epoch begins (0 at an epoch start). */
    public long startSample() {
        if (remote != null) {
            return remote.startSample();
        }
        return welcome.startSample();
    }

    /**
     * Position in the producer's stream (producer epoch × samples per epoch + sample) of a batch's first
     * sample: where the producer emitted it.
     */
    public long streamPosition(Batch batch) {
        if (remote != null) {
            return remote.streamPosition(batch);
        }
        return stream.streamPosition(batch.epoch(), batch.sampleStart());
    }

    /** Tensors of every batch, in order, with their per-sample shapes. */
    public List<TensorSpec> tensors() {
        return specs;
    }

    /** The source's description as the producer gave it (for a synthetic source, its parameters). */
    public String sourceDescription() {
        if (remote != null) {
            return remote.sourceDescription();
        }
        return welcome.source();
    }

    /** Epochs the producer runs (0 = unbounded). */
    public long producerEpochs() {
        if (remote != null) {
            return remote.producerEpochs();
        }
        return welcome.epochs();
    }

    /** Whether the producer's stream has ended and every batch of it was handed out. */
    public boolean isEndOfStream() {
        if (remote != null) {
            return remote.isEndOfStream();
        }
        lock.lock();
        try {
            if (!closed && !stream.streamEnded() && link.streamEnded()) {
                for (Message m = link.poll(); m != null; m = link.poll()) {
                    handle(m);
                }
            }
            return stream.isEndOfStream(welcome.epochs());
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
        if (remote != null) {
            return new RemoteEpoch(remote.iterator());
        }
        lock.lock();
        try {
            checkOpen();
            link.check();
            closeCurrent();
            if (stream.epochStarted()) {
                skipTo(stream.epochEnd());
            }
            stream.beginEpoch();
            return new EpochIterator();
        } finally {
            lock.unlock();
        }
    }

    /** A remote epoch, timed like a local one so {@link #waitNanos()} and {@link #workNanos()} hold for both. */
    private final class RemoteEpoch implements Iterator<Batch> {
        private final Iterator<Batch> epoch;

        RemoteEpoch(Iterator<Batch> epoch) {
            this.epoch = epoch;
        }

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
    }

    private final class EpochIterator implements Iterator<Batch> {
        private final long epochBaseAtStart = stream.epochBase();

        @Override
        public boolean hasNext() {
            return timed(() -> {
                releaseConsumed();
                if (stream.epochBase() != epochBaseAtStart) {
                    return false; // a newer iterator took over
                }
                return nextBatchSize() > 0;
            });
        }

        @Override
        public Batch next() {
            return timed(() -> {
                releaseConsumed();
                closeCurrent();
                int n = stream.epochBase() == epochBaseAtStart ? nextBatchSize() : 0;
                if (n == 0) {
                    throw new NoSuchElementException("epoch " + stream.epoch() + " has no more batches");
                }
                current = assemble(n);
                if (!waitedForData) {
                    releaseConsumed(); // the slots a gathered batch was copied from
                }
                waitedForData = false;
                meter.handed(n);
                return current;
            });
        }
    }

    /**
     * Runs one iterator call under the lock, counting its time as waiting and the time since the previous
     * call as work, for {@link #waitNanos()}, {@link #workNanos()} and the producer's status.
     */
    private <T> T timed(Supplier<T> call) {
        lock.lock();
        long entered = meter.enter();
        try {
            checkOpen();
            Message.Progress report = link != null ? meter.reportDue(entered, stream.epoch()) : null;
            if (report != null) {
                link.sendQuietly(report);
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
        lock.lock();
        try {
            return meter.waitNanos();
        } finally {
            lock.unlock();
        }
    }

    /** Time spent outside the iterator between batches (the caller's work), in nanoseconds. */
    public long workNanos() {
        lock.lock();
        try {
            return meter.workNanos();
        } finally {
            lock.unlock();
        }
    }

    /** Samples handed out so far, over all epochs. */
    public long samplesConsumed() {
        lock.lock();
        try {
            return meter.samples();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Samples in the next batch of this epoch, waiting for them to arrive; 0 at the end of the epoch
     * (or of the stream).
     */
    private int nextBatchSize() {
        link.check();
        while (true) {
            int n = stream.nextBatch();
            if (n == 0) {
                releaseConsumed(); // the epoch is over: nothing may stay held while the caller does other work
            }
            if (n != ConsumerStream.NEED_MORE) {
                return n;
            }
            receiveOne();
        }
    }

    /** Waits for the next message from the producer and applies it. */
    private void receiveOne() {
        if (violation != null) {
            throw violation;
        }
        releaseConsumed(); // before waiting: the producer may be waiting for these very slots
        Message m = link.take(options.batchTimeout().toNanos(), "batch data");
        waitedForData |= link.waited();
        try {
            handle(m);
        } catch (ProtocolException e) {
            violation = e;
            throw e;
        }
    }

    private void handle(Message m) {
        switch (m) {
            case Message.BatchReady r -> {
                try {
                    stream.accept(new BatchPosition(r.seq(), r.epoch(), r.index(), r.sampleStart(), r.samples()), r.slot());
                } catch (IllegalArgumentException e) {
                    throw new ProtocolException("producer '" + producer + "' sent " + e.getMessage());
                }
            }
            case Message.EpochEnd e -> {
                if (e.samples() != samplesPerEpoch) {
                    throw new ProtocolException("producer '" + producer + "' ended epoch " + e.epoch() + " after "
                            + e.samples() + " samples, not " + samplesPerEpoch);
                }
            }
            case Message.EndOfStream e -> stream.endOfStream();
            default -> throw new ProtocolException("unexpected " + m.getClass().getSimpleName() + " from producer '"
                    + producer + "'");
        }
    }

    /** Consumes samples up to {@code target} without handing them out, releasing what they occupied. */
    private void skipTo(long target) {
        // Skips what has arrived, releases it, then waits for more: waiting for the whole range first would
        // hold every slot it occupies, and a range longer than the arena could then never arrive.
        while (!stream.skipArrived(target)) {
            releaseConsumed();
            if (stream.streamEnded()) {
                return;
            }
            receiveOne();
        }
        releaseConsumed();
    }

    private Batch assemble(int n) {
        ConsumerStream.BatchPlan plan = stream.take(n);
        Lease lease = Lease.open("batch " + plan.index() + " of epoch " + plan.epoch());
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        for (int t = 0; t < specs.size(); t++) {
            TensorSpec spec = specs.get(t);
            long sb = sampleBytes[t];
            MemorySegment view;
            if (!plan.single()) {
                closeRetired(); // its views may read the gather buffer that is about to be refilled
            }
            if (plan.single()) {
                ConsumerStream.Piece p = plan.pieces().getFirst();
                view = arena.region(p.slot(), t).asSlice(p.offset() * sb, n * sb);
            } else {
                MemorySegment into = gatherBuffer(t);
                for (ConsumerStream.Piece p : plan.pieces()) {
                    MemorySegment.copy(arena.region(p.slot(), t), p.offset() * sb, into, p.destOffset() * sb,
                            p.samples() * sb);
                }
                view = into.asSlice(0, n * sb);
            }
            tensors.put(spec.name(), new Tensor(spec.dtype(), spec.batchShape(n),
                    view.reinterpret(lease.scope(), null).asReadOnly(), lease));
        }
        long pinned = plan.single() ? plan.pieces().getFirst().seq() : -1;
        return new Batch(tensors, plan.epoch(), plan.index(), plan.sampleStart(), lease, () -> onBatchClosed(pinned));
    }

    /**
     * Tensor {@code t}'s gather buffer, allocated on first use: a consumer whose batches always lie inside
     * one slot (its batch size is the loader's) never needs one, and for large batches it is tens of MB.
     */
    private MemorySegment gatherBuffer(int t) {
        if (gather[t] == null) {
            gather[t] = gatherScope.allocate(Math.max(1, sampleBytes[t] * batchSize), 64);
            gather[t].fill((byte) 0); // touched once here, not page by page inside the first copies
        }
        return gather[t];
    }

    private void onBatchClosed(long pinned) {
        lock.lock();
        try {
            if (pinned >= 0) {
                stream.unpin(pinned);
            }
            if (!closed && (retired == null || lock.getHoldCount() == 1)) {
                releaseConsumed(); // but a release that waits for the consumer's next call (see retired)
            }
        } catch (TensorSocketException e) {
            // the producer is gone; the next call on the consumer reports it, closing a batch does not
        } finally {
            lock.unlock();
        }
    }

    /**
     * Closes the retired batch's scope and tells the producer which batches this consumer is done with, in
     * one write. For a batch the consumer waited for, this runs at the next call, before waiting or at an
     * epoch's end, never between the batch's arrival and its handing out: a scope close is a handshake with
     * every thread of the JVM, and a socket write wakes the producer, which on a machine with few cores takes
     * the core from this thread; either would add to the awaited batch's latency.
     */
    private void releaseConsumed() {
        closeRetired(); // first: a slot goes back only once no view of it can be read
        List<Message> releases = null;
        for (long seq = stream.pollReleasable(); seq >= 0; seq = stream.pollReleasable()) {
            if (releases == null) {
                releases = new ArrayList<>(2);
            }
            releases.add(new Message.Release(seq));
        }
        if (releases != null) {
            link.send(releases);
        }
    }

    /**
     * Releases the current batch: at once if the next batch was already there (the consumer is the slower
     * side: the producer may be waiting for this slot), else at the consumer's next call ({@link #retired}).
     */
    private void closeCurrent() {
        Batch b = current;
        current = null;
        closeRetired();
        if (b != null && waitedForData) {
            retired = b.lease();
            b.retire();
        } else if (b != null) {
            b.close();
        }
    }

    private void closeRetired() {
        Lease r = retired;
        retired = null;
        if (r != null) {
            r.closeScope();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this consumer of producer '" + producer + "' is closed");
        }
    }

    /**
     * Leaves the producer: the current batch is released and the producer frees everything this consumer
     * held. Idempotent.
     */
    @Override
    public void close() {
        if (!lock.tryLock()) {
            if (remote == null) {
                link.abortWait(); // another thread waits in next(), holding the lock: end its wait, not ours
            }
            lock.lock();
        }
        try {
            if (closed) {
                return;
            }
            Batch b = current;
            current = null;
            closed = true;
            if (b != null) {
                b.close();
            }
            closeRetired();
            if (remote != null) {
                remote.close();
                return;
            }
            link.close();
            arena.close();
            gatherScope.close();
        } finally {
            lock.unlock();
        }
    }
}
