package io.tensorsocket.external;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.IndexedSource;
import io.tensorsocket.SourceStoppedException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.EpochOrders;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batches written by another process, the feeder (for example a PyTorch {@code DataLoader} driven by the
 * Python client): the producer keeps every consumer rule (joins, releases, pace, eviction, status) and the
 * feeder only fills slots.
 *
 * <pre>
 *  feeder                                   producer (feeder.sock in its directory)
 *    FEEDER_HELLO tensors, batch size,  ──►  sizes and creates the arena, opens control.sock
 *                 samples/epoch, epochs
 *                                       ◄──  FEEDER_WELCOME arena path, claims ahead
 *    CLAIM                              ──►  waits for a free slot (as for any source)
 *                                       ◄──  SLOT seq, offset of the slot in the arena file
 *    writes the batch into the mapping
 *    PUBLISH seq, samples               ──►  serves the batch to the consumers
 *    ... FEEDER_EPOCH_END epoch, samples──►  the epoch ends
 *                                       ◄──  FEEDER_EPOCH_END (the same: taken)
 * </pre>
 *
 * A feeder that loads samples by index (a map-style data set) declares the data set's size, whether to shuffle and a
 * seed; the producer then chooses each epoch's order ({@link IndexedSource}: consumers joining mid-epoch get exact
 * epochs) and sends it when the feeder asks (ORDER_REQUEST, before the epoch's first CLAIM), as ORDER frames of up
 * to 16000 ids; the feeder loads and publishes the samples in that order. Sent only on request, the order never
 * fills the socket of a feeder that is busy elsewhere between epochs. Such a feeder may also open lane connections
 * (FEEDER_HELLO's {@code lanes}), on which it loads the batches of the producer's lanes beside the main stream's,
 * with loader workers of their own: then a consumer that falls behind moves to a lane ({@link LaneFeeders}).
 *
 * <p>One feeder per producer: a second one is refused with an ERROR naming the first. A feeder that breaks
 * its declaration (more samples than declared, a short batch before the epoch's end, a publish of a slot
 * it does not hold, an epoch of the wrong length), reports an error itself, goes silent for longer than the
 * feeder timeout or disconnects before its last epoch ends, fails the producer: every consumer gets an
 * ERROR (LOADER_FAILED) naming the feeder's pid and what it did, and the stream ends. A new feeder does not
 * take over: the consumers of the broken epoch saw part of it, and a stream whose epochs are not what was
 * declared would be wrong data; restarting producer and feeder gives a clean stream. The rules of an epoch's
 * frames are {@link FeederEpoch}'s.
 *
 * <p>A feeder that stops on purpose says so with ERROR: PRODUCER_CLOSED between epochs ends the stream there,
 * and consumers finish normally; PRODUCER_CLOSED mid-epoch, or STOPPED (an interrupted feeder) at any time,
 * stops the producer, and consumers are told it stopped (see {@link SourceStoppedException}). A producer
 * started for one feeder process ({@code owner}) stops with it: when that process exits, or its first
 * declaration is refused, before the stream began. A feeder whose connection ends while the producer waits
 * in a claim (for a free slot, or for its first consumers) fails the stream at once.
 */
public final class ExternalSource implements IndexedSource {
    private static final Logger log = LoggerFactory.getLogger(ExternalSource.class);
    private static final Duration HELLO_TIMEOUT = Duration.ofSeconds(10);
    /** How often a producer waiting for the feeder that started it looks whether that process still lives. */
    private static final long OWNER_CHECK_NANOS = 200_000_000L;

    private final String producer;
    private final Duration attachTimeout;
    private final Duration feederTimeout;
    /** The feeder process this producer was started for, or null: the producer waits for any feeder. */
    private final ProcessHandle owner;

    private ServerSocketChannel server;
    private Path socketPath;
    private Path arenaPath;
    private volatile FeederLink feeder;
    private Message.FeederHello hello;
    private BatchLayout layout;
    private boolean welcomed;
    private long nextSeq;
    private volatile boolean closed;
    private final LaneFeeders lanes;

    /**
     * @param producer      the producer's name, for messages
     * @param attachTimeout how long the producer waits for a feeder to connect and declare its batches
     * @param feederTimeout how long the producer waits on a silent feeder (no claim, publish or epoch end)
     */
    public ExternalSource(String producer, Duration attachTimeout, Duration feederTimeout) {
        this(producer, attachTimeout, feederTimeout, null);
    }

    /**
     * @param owner the feeder process this producer was started for: the producer stops when it exits, or its
     *              declaration is refused, before the stream began; null to wait for any feeder
     */
    public ExternalSource(String producer, Duration attachTimeout, Duration feederTimeout, ProcessHandle owner) {
        this.producer = producer;
        this.attachTimeout = attachTimeout;
        this.feederTimeout = feederTimeout;
        this.owner = owner;
        this.lanes = new LaneFeeders(producer, HELLO_TIMEOUT, feederTimeout);
    }

    @Override
    public void awaitLayout(Path producerDirectory) throws IOException, InterruptedException {
        socketPath = producerDirectory.resolve(ProducerDirectory.FEEDER_SOCKET_FILE);
        arenaPath = producerDirectory.resolve(ProducerDirectory.ARENA_FILE);
        Files.deleteIfExists(socketPath);
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socketPath));
        Files.setPosixFilePermissions(socketPath, PosixFilePermissions.fromString("rw-------"));
        BlockingQueue<SocketChannel> arrivals = new LinkedBlockingQueue<>();
        Thread.ofPlatform()
                .daemon()
                .name("tensorsocket-feeder-accept-" + producer)
                .start(() -> acceptLoop(arrivals));
        log.info(
                "producer '{}' waits up to {} s for a feeder on {}{}",
                producer,
                attachTimeout.toSeconds(),
                socketPath,
                owner != null ? " (the one of pid " + owner.pid() + ", which started it)" : "");
        long deadline = System.nanoTime() + attachTimeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            SocketChannel ch = arrivals.poll(Math.max(0, Math.min(left, OWNER_CHECK_NANOS)), TimeUnit.NANOSECONDS);
            if (ch == null && owner != null && !owner.isAlive()) {
                throw new FeederFailedException(
                        "the feeder that started producer '" + producer + "' (pid " + owner.pid()
                                + ") exited before it declared its batches; the producer stops with it (see the feeder's output"
                                + " for why)");
            }
            if (ch == null && left > OWNER_CHECK_NANOS) {
                continue;
            }
            if (ch == null) {
                throw new TensorSocketTimeoutException("no feeder declared the batches of producer '" + producer
                        + "' within "
                        + attachTimeout.toSeconds() + " s; start one, e.g. python3 -m tensorsocket_client feed --name "
                        + producer + " ..., or tensorsocket_client.TensorProducer(\"" + producer
                        + "\", loader) in Python");
            }
            if (accept(ch)) {
                return;
            }
        }
    }

    /** Takes a feeder's declaration; false (and the connection closed with a reason) if it is refused. */
    private boolean accept(SocketChannel ch) throws IOException, InterruptedException {
        FeederLink link = new FeederLink(new MessageChannel(ch), producer);
        feeder = link;
        Object first = link.next(HELLO_TIMEOUT);
        String problem;
        if (first instanceof Message.FeederHello h) {
            problem = FeederDeclaration.problem(h);
            if (problem == null) {
                hello = h;
                layout = new BatchLayout(h.tensors(), h.batchSize());
                link.named("the feeder of producer '" + producer + "' (pid " + h.pid() + ", " + h.client() + ")");
                lanes.attached(h, link.who(), socketPath.getParent());
                log.info(
                        "producer '{}': {} declared {} samples per epoch in batches of {}: {}{}",
                        producer,
                        link.who(),
                        h.samplesPerEpoch(),
                        h.batchSize(),
                        h.tensors(),
                        h.datasetSize() > 0
                                ? (h.shuffle()
                                        ? "; fed by index, shuffled with seed " + h.seed()
                                                + " (the same seed repeats every epoch's order)"
                                        : "; fed by index, in order")
                                : "");
                return true;
            }
            problem = "the feeder's declaration is refused: " + problem;
        } else if (first instanceof Message.Error e) {
            problem = "the feeder failed before it declared its batches: " + e.message();
        } else if (first == null) {
            problem = "a feeder connected but sent no FEEDER_HELLO within " + HELLO_TIMEOUT.toSeconds() + " s";
        } else {
            problem = "a feeder's first message was " + describe(first) + ", not FEEDER_HELLO";
        }
        feeder = null; // before the refusal: a feeder that connects again once it read it is taken, not refused
        link.sendQuietly(new Message.Error(Message.ErrorCode.BAD_REQUEST, problem));
        link.close();
        if (owner != null) {
            throw new FeederFailedException("producer '" + producer + "' was started for its feeder (pid " + owner.pid()
                    + ") and stops with it: " + problem);
        }
        log.warn("producer '{}': {}; waiting for another feeder", producer, problem);
        return false;
    }

    private void acceptLoop(BlockingQueue<SocketChannel> arrivals) {
        while (!closed) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            if (hello == null && feeder == null) {
                arrivals.add(ch);
                continue;
            }
            if (hello != null) {
                lanes.offer(ch); // one of its lane connections, or refused
                continue;
            }
            // One feeder fills the slots; a second would interleave batches of two loaders.
            MessageChannel mc = new MessageChannel(ch);
            mc.sendQuietly(new Message.Error(
                    Message.ErrorCode.BAD_REQUEST,
                    "producer '" + producer + "' already has a feeder"
                            + (hello != null
                                    ? " (pid " + hello.pid() + ", " + hello.client() + ")"
                                    : " (another feeder connected first and is declaring its batches)")
                            + "; one feeder per producer: feed another name (another producer)"));
            Thread.ofVirtual()
                    .name("tensorsocket-feeder-refuse-" + producer)
                    .start(() -> MessageChannel.closeAfterPeerRead(ch));
        }
    }

    @Override
    public BatchLayout layout() {
        return layout;
    }

    @Override
    public long samplesPerEpoch() {
        return hello.samplesPerEpoch();
    }

    @Override
    public long epochs(long requested) {
        return hello.epochs();
    }

    @Override
    public String description() {
        return hello.description().isEmpty()
                ? "external feeder pid " + hello.pid() + " (" + hello.client() + ")"
                : hello.description();
    }

    /** This source when its feeder loads by index (it declared a data set size), else null: it keeps its order. */
    @Override
    public IndexedSource byIndex() {
        return hello != null && hello.datasetSize() > 0 ? this : null;
    }

    @Override
    public int datasetSize() {
        return (int) hello.datasetSize();
    }

    @Override
    public boolean shuffles() {
        return hello.shuffle();
    }

    @Override
    public OptionalLong shuffleSeed() {
        return OptionalLong.of(hello.seed());
    }

    @Override
    public SplittableRandom shuffleRandom(long epoch) {
        return EpochOrders.seeded(hello.seed(), epoch);
    }

    @Override
    public void emitEpoch(long epoch, BatchSink sink) throws Exception {
        feed(epoch, null, sink);
    }

    @Override
    public void emitEpoch(long epoch, int[] order, BatchSink sink) throws Exception {
        if (sink.lane() > 0) {
            lanes.feed(epoch, order, sink, null);
        } else if (order.length < hello.samplesPerEpoch()) {
            tail(epoch, order, sink);
        } else {
            feed(epoch, order, sink);
        }
    }

    /** Whether the feeder loads by index and opens lane connections: a lane's epochs are loaded on one of them. */
    @Override
    public boolean loadsConcurrently() {
        return hello != null && hello.datasetSize() > 0 && hello.lanes() > 0;
    }

    /** Closes the feeder's lane connections: its lane threads end, and a feeder that waits for them goes. */
    @Override
    public void lanesDone() {
        lanes.close();
    }

    /** What the feeder declared its loader's workers need of the shared memory beside the arena. */
    @Override
    public long sharedMemoryReserve() {
        return hello == null ? 0 : hello.shmReserve();
    }

    /** Tells the feeder (PAUSED), which stops its loader's workers until a slot is granted. */
    @Override
    public void paused() {
        FeederLink link = feeder;
        if (link != null && welcomed) {
            link.sendQuietly(new Message.Paused());
        }
    }

    /** The feeder's process: its loader's workers are its children. */
    @Override
    public long loaderPid() {
        return hello == null ? ProcessHandle.current().pid() : hello.pid();
    }

    /** As many lanes as the feeder opens lane connections. */
    @Override
    public int lanesAtMost() {
        return loadsConcurrently() ? hello.lanes() : 0;
    }

    /**
     * The tail of a finite stream (the first samples of the epoch after its last, owed to consumers that joined
     * mid-epoch): the feeder's main connection fed its declared epochs, so one of its lane connections loads them,
     * into the main arena.
     */
    private void tail(long epoch, int[] order, BatchSink sink) throws InterruptedException {
        if (!loadsConcurrently()) {
            throw new FeederFailedException(feeder.who() + " opens no lane connections (lanes=0), so the rest of the"
                    + " last epoch of the consumers that joined mid-epoch cannot be loaded");
        }
        lanes.feed(epoch, order, sink, arenaPath);
    }

    private void feed(long epoch, int[] order, BatchSink sink) throws Exception {
        FeederLink link = feeder;
        link.feedInto(sink);
        if (!welcomed) {
            link.send(
                    new Message.FeederWelcome(ProcessHandle.current().pid(), arenaPath.toString(), sink.claimsAhead()),
                    " before epoch 0");
            welcomed = true;
        }
        FeederEpoch frames = new FeederEpoch(
                epoch,
                order,
                hello.samplesPerEpoch(),
                "per epoch it declared",
                hello,
                link.who(),
                sink.claimsAhead(),
                nextSeq,
                link);
        while (true) {
            Object o = link.next(feederTimeout);
            if (o == null) {
                throw link.fail(link.who() + " sent nothing for " + feederTimeout.toSeconds() + " s" + frames.at()
                        + " (is it stopped or stuck in its loader?)");
            }
            if (frames.take(o)) {
                nextSeq = frames.nextSeq();
                return;
            }
        }
    }

    private static String describe(Object m) {
        return m.getClass().getSimpleName();
    }

    /** Tells the feeder why its producer cannot serve (it failed before it served), then closes. */
    @Override
    public void abandon(String reason) {
        FeederLink link = feeder;
        if (link != null) {
            link.sendQuietly(new Message.Error(
                    Message.ErrorCode.BAD_REQUEST, "producer '" + producer + "' cannot serve: " + reason));
        }
        close();
    }

    @Override
    public void close() {
        closed = true;
        lanes.close();
        FeederLink link = feeder;
        if (link != null) {
            link.close();
        }
        if (server != null) {
            try {
                server.close();
            } catch (IOException ignored) {
                // nothing left to release
            }
        }
        if (socketPath != null) {
            try {
                Files.deleteIfExists(socketPath);
            } catch (IOException ignored) {
                // the producer's directory goes with it
            }
        }
    }
}
