package io.tensorsocket.flight;

import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerEvictedException;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.RequestRejectedException;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.spi.ConsumerEngine;
import io.tensorsocket.spi.ConsumerFacade;
import io.tensorsocket.spi.StreamTerms;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightGrpcUtils;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.auth2.BearerCredentialWriter;
import org.apache.arrow.flight.grpc.CredentialCallOption;
import org.apache.arrow.flight.grpc.NettyClientBuilder;
import org.apache.arrow.flight.grpc.StatusUtils;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer of a producer on another host, reached over Arrow Flight at {@code grpc://HOST:PORT/NAME}
 * (or {@code grpc+tls://}). It has the contract and shape of a local consumer: iterating it yields one
 * epoch, exactly once and in order, at its own batch size; each batch is a view of the received Arrow
 * buffers, valid until the next batch is asked for or it is closed; a server that falls silent for
 * {@link RemoteOptions#silenceTimeout()} (it sends a heartbeat every half second) is reported as gone.
 * The silence counts only while this process runs: after a pause of its own (SIGSTOP, a long GC) it reads
 * what arrived meanwhile before judging. Not thread-safe: one thread iterates.
 */
public final class RemoteConsumer implements ConsumerEngine {
    private static final int FLOW_CONTROL_WINDOW = 64 << 20;
    private static final long WATCH_PERIOD_MS = 100;
    /** A watchdog tick this late means the whole process was stopped, not that the server fell silent. */
    private static final long PAUSED_AFTER_NANOS = 500_000_000L;

    private final RemoteAddress address;
    private final ConsumerOptions options;
    private static final Logger log = LoggerFactory.getLogger(RemoteConsumer.class);
    private final RemoteOptions remote;
    // Flight reads each batch into one buffer of its size; recycling them keeps the stream off fresh memory.
    private final RecyclingAllocations recycling = new RecyclingAllocations(RecyclingAllocations.KEEP_BYTES);
    private final BufferAllocator allocator = RecyclingAllocations.rootAllocator(recycling);
    private final ManagedChannel channel;
    private final DoGetReader reader;
    private final VectorSchemaRoot root;
    private final VectorLoader loader;
    private final ScheduledExecutorService watchdog;
    private final StreamHeader header;
    private final List<TensorSpec> specs;
    private final StreamTerms terms;
    private final long silenceNanos;

    private final EventLoopGroup eventLoop;
    private volatile long lastBytesNanos;
    private volatile long waitingSince; // 0 when not waiting on the server
    private volatile long deadlineNanos;
    private volatile boolean timedOut;
    /** The watchdog's last tick and the last time it found this process had been paused (its thread only). */
    private long lastTickNanos = System.nanoTime();

    private long resumedNanos;
    private Batch current;
    private long currentPosition = -1;
    private long epoch;
    private boolean epochOpen;
    private boolean epochDone;
    private boolean endOfStream;
    private volatile boolean closed;
    /** A Flight client over this consumer's channel for actions, made at the first; guarded by this. */
    private FlightClient actions;

    private RemoteConsumer(RemoteAddress address, ConsumerOptions options, RemoteOptions remote) {
        this.address = address;
        this.options = options;
        this.remote = remote;
        this.silenceNanos = remote.silenceTimeout().toNanos();
        NettyClientBuilder cb = new NettyClientBuilder(allocator, address.location());
        if (address.tls()) {
            cb.useTls();
            if (remote.trustedCertificates() != null) {
                try {
                    // read now: the builder reads the stream only when the channel is built
                    cb.trustedCertificates(new ByteArrayInputStream(Files.readAllBytes(remote.trustedCertificates())));
                } catch (IOException e) {
                    allocator.close();
                    throw new IllegalArgumentException(
                            "cannot read trusted certificates " + remote.trustedCertificates() + ": " + e.getMessage(),
                            e);
                }
            }
        }
        // The socket notes when bytes last arrived: a 38 MB batch can take seconds to arrive on a slow link,
        // and that is progress, not silence. (gRPC's keepalive pings cannot go below 10 s.)
        this.eventLoop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        // A 1 MiB HTTP/2 window (gRPC's default) caps a stream at one window per round trip through both
        // event loops and the deframing thread: tens of MB/s on a busy host. Batches are tens of MB.
        NettyChannelBuilder channel = cb.build()
                .flowControlWindow(FLOW_CONTROL_WINDOW)
                .eventLoopGroup(eventLoop)
                .channelFactory(() -> new ReceivingChannel(now -> lastBytesNanos = now));
        this.channel = channel.build();
        this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tensorsocket-remote-watchdog");
            t.setDaemon(true);
            return t;
        });
        DoGetReader r = null;
        VectorSchemaRoot opened = null;
        try {
            StreamRequest request = new StreamRequest(
                    address.name(),
                    options.batchSize(),
                    options.dropLast(),
                    remote.epochs(),
                    options.batchTimeout(),
                    options.startPolicy());
            r = new DoGetReader(this.channel, allocator, request.encode(), remote.token());
            DoGetReader started = r;
            watchdog.scheduleWithFixedDelay(
                    () -> check(started), WATCH_PERIOD_MS, WATCH_PERIOD_MS, TimeUnit.MILLISECONDS);
            DoGetReader.Frame first = await(options.connectTimeout().toNanos(), r::next);
            Schema schema = schema(first);
            opened = VectorSchemaRoot.create(schema, allocator);
            try {
                this.header = StreamHeader.fromMetadata(schema.getCustomMetadata());
                this.specs = List.copyOf(TensorColumns.specs(schema));
            } catch (IllegalArgumentException e) {
                throw new ProtocolException(
                        "server " + address + " is not a TensorSocket server: " + e.getMessage(), e);
            }
            this.reader = r;
            this.root = opened;
            this.loader = new VectorLoader(opened);
            this.epoch = header.startEpoch();
            this.terms = termsOf(header, specs);
        } catch (RuntimeException e) {
            if (r != null) {
                r.close();
            }
            if (opened != null) {
                opened.close();
            }
            shutdown();
            throw e instanceof FlightRuntimeException f ? translate(f) : e;
        }
    }

    /** What the stream is, as its header says: one record for every getter. */
    private static StreamTerms termsOf(StreamHeader h, List<TensorSpec> specs) {
        long n = h.samplesPerEpoch();
        int b = h.batchSize();
        return new StreamTerms(
                h.dropLast() ? n / b : (n + b - 1) / b,
                n,
                b,
                h.producerBatchSize(),
                h.startMode(),
                h.midEpoch(),
                h.startEpoch(),
                h.startSample(),
                h.consumerId(),
                null,
                specs,
                h.description(),
                h.producerEpochs(),
                "flight");
    }

    @Override
    public StreamTerms terms() {
        return terms;
    }

    /** The stream's schema, from its first message. */
    private Schema schema(DoGetReader.Frame first) {
        if (first == null) {
            throw new ProtocolException("server " + address + " ended the stream before sending its schema");
        }
        first.release();
        Message m = header(first);
        if (m == null || m.headerType() != MessageHeader.Schema) {
            throw new ProtocolException("server " + address + " did not start the stream with a schema");
        }
        return MessageSerializer.deserializeSchema(m);
    }

    private static Message header(DoGetReader.Frame f) {
        return f.header() == null ? null : Message.getRootAsMessage(ByteBuffer.wrap(f.header()));
    }

    /**
     * A {@link TensorConsumer} of the producer at {@code uri}, with remote options given in code (a token, trusted
     * certificates) rather than by the environment as {@link TensorConsumer#connect(String, ConsumerOptions)} reads them.
     */
    public static TensorConsumer tensorConsumer(String uri, ConsumerOptions options, RemoteOptions remote) {
        return ConsumerFacade.over(uri, connect(uri, options, remote));
    }

    /** Connects to {@code uri} ({@code grpc://HOST:PORT/NAME} or {@code grpc+tls://...}). */
    public static RemoteConsumer connect(String uri, ConsumerOptions options, RemoteOptions remote) {
        return connect(RemoteAddress.parse(uri), options, remote);
    }

    /**
     * Connects to {@code address}. A server that does not answer yet (not listening: jobs are launched together,
     * and {@code serve --flight} may come last) is tried again until the connect timeout, with one INFO line
     * after {@link ProducerSocket#PROGRESS_AFTER}; what it waited for is in the exception at the end.
     */
    public static RemoteConsumer connect(RemoteAddress address, ConsumerOptions options, RemoteOptions remote) {
        long started = System.nanoTime();
        long deadline = started + options.connectTimeout().toNanos();
        boolean announced = false;
        while (true) {
            long left = deadline - System.nanoTime();
            try {
                return new RemoteConsumer(
                        address, options.withConnectTimeout(Duration.ofNanos(Math.max(left, 1_000_000))), remote);
            } catch (ProducerGoneException e) {
                if (!(e.getCause() instanceof FlightRuntimeException f)
                        || f.status().code() != FlightStatusCode.UNAVAILABLE
                        || fromTheProducer(f)) {
                    throw e;
                }
                if (deadline - System.nanoTime() <= RETRY_NANOS) {
                    throw new ProducerGoneException(
                            "server " + address + " did not answer within "
                                    + options.connectTimeout().toSeconds()
                                    + " s (the consumer's connect timeout; raise it to"
                                    + " wait longer): " + e.getMessage(),
                            e);
                }
                if (!announced && System.nanoTime() - started >= ConsumerOptions.WAIT_NOTICE_AFTER.toNanos()) {
                    log.info(
                            "waiting for server {} to appear: it does not answer yet ({}); waiting up to {} s in all",
                            address,
                            e.getMessage(),
                            options.connectTimeout().toSeconds());
                    announced = true;
                }
                try {
                    Thread.sleep(RETRY_NANOS / 1_000_000);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new TensorSocketTimeoutException("interrupted while waiting for server " + address);
                }
            }
        }
    }

    /** How a server's stream says that its producer refused or ended the stream (see {@code StreamSession}). */
    private static final String PRODUCER_GONE = ProducerGoneException.class.getSimpleName() + ": ";

    /** Whether an UNAVAILABLE came from the producer behind a server that answered, not from an unreachable one. */
    private static boolean fromTheProducer(FlightRuntimeException e) {
        String d = e.status().description();
        return d != null && d.startsWith(PRODUCER_GONE);
    }

    /** How often a consumer tries again to reach a server that does not answer yet. */
    private static final long RETRY_NANOS = 200_000_000L;

    // ------------------------------------------------------------------------------------------------ info

    /**
     * Sends the {@link BoundaryAction} on this consumer's own connection and waits at most {@code timeout} for the
     * answer. Whatever fails (a server without the action, no answer in time, a broken link) is
     * {@link UpstreamBoundaries.Answer#UNAVAILABLE}: a joiner then rolls rather than waits.
     */
    UpstreamBoundaries.Answer boundary(byte op, long epoch, long sample, Duration timeout) {
        if (header.consumerId() < 0 || closed) {
            return UpstreamBoundaries.Answer.UNAVAILABLE;
        }
        FlightClient client;
        synchronized (this) {
            if (actions == null) {
                actions = FlightGrpcUtils.createFlightClientWithSharedChannel(allocator, channel);
            }
            client = actions;
        }
        List<CallOption> calls = new ArrayList<>();
        calls.add(CallOptions.timeout(timeout.toMillis(), TimeUnit.MILLISECONDS));
        if (remote.token() != null) {
            calls.add(new CredentialCallOption(new BearerCredentialWriter(remote.token())));
        }
        byte[] body = BoundaryAction.encode(new BoundaryAction.Request(op, header.consumerId(), epoch, sample));
        try {
            Iterator<Result> results =
                    client.doAction(new Action(BoundaryAction.TYPE, body), calls.toArray(CallOption[]::new));
            UpstreamBoundaries.Answer a = results.hasNext()
                    ? BoundaryAction.answer(results.next().getBody())
                    : UpstreamBoundaries.Answer.UNAVAILABLE;
            while (results.hasNext()) {
                results.next();
            }
            return a;
        } catch (FlightRuntimeException | IllegalArgumentException e) {
            log.info("server {} did not keep a boundary for the relay ({}): its joiner rolls", address, e.getMessage());
            return UpstreamBoundaries.Answer.UNAVAILABLE;
        }
    }

    /** The server's address. */
    public RemoteAddress address() {
        return address;
    }

    /** The current (or last finished) epoch. */
    @Override
    public long epoch() {
        return epoch;
    }

    /**
     * Runs {@code action} once, on a gRPC thread, when the stream fails: the server went away, the network
     * broke, or the server ended the stream with an error; {@code action} gets what this consumer's next read
     * would throw. It runs even while nobody reads (a relay with no consumers of its own); not when the
     * stream completes or this consumer closes it.
     */
    public void onFailure(Consumer<TensorSocketException> action) {
        AtomicBoolean told = new AtomicBoolean();
        Consumer<TensorSocketException> once = e -> {
            if (!closed && told.compareAndSet(false, true)) {
                action.accept(e);
            }
        };
        reader.onEnd(status -> {
            if (!status.isOk()) {
                once.accept(translate(StatusUtils.fromGrpcStatus(status).toRuntimeException()));
            }
        });
        // gRPC delivers a call's end only after the messages queued ahead of it are taken; the connection's
        // state says at once that the one connection this stream runs on is gone.
        watchConnection(ConnectivityState.READY, once);
    }

    private void watchConnection(ConnectivityState seen, Consumer<TensorSocketException> action) {
        ConnectivityState now = channel.getState(false);
        if (reader.endedByServer()) {
            return; // the server ended the stream first: what it sent, and how it ended, is read from the queue
        }
        if (now != seen && seen == ConnectivityState.READY) {
            action.accept(new ProducerGoneException("server " + address + " went away: the connection to it was lost ("
                    + now.name().toLowerCase(Locale.ROOT) + ")"));
            return;
        }
        if (!closed) {
            channel.notifyWhenStateChanged(now, () -> watchConnection(seen, action));
        }
    }

    /** Whether the producer's stream has ended. */
    @Override
    public boolean isEndOfStream() {
        return endOfStream;
    }

    /** The producer-stream position of the current batch's first sample. */
    @Override
    public long streamPosition(Batch batch) {
        if (batch != current) {
            throw new IllegalArgumentException("only the current batch's stream position is known");
        }
        return currentPosition;
    }

    // ------------------------------------------------------------------------------------------------ iteration

    /**
     * The next epoch's batches. An epoch left unfinished by an earlier iterator is skipped to its end
     * first.
     */
    @Override
    public Iterator<Batch> iterator() {
        checkOpen();
        closeCurrent();
        if (epochOpen && !epochDone) {
            while (!endOfStream && !epochDone) {
                RecordTag t = read();
                if (t != null && t.kind() == RecordTag.Kind.BATCH) {
                    closeCurrent();
                }
            }
        }
        if (epochOpen) {
            epoch++;
        }
        epochOpen = true;
        epochDone = false;
        return new Iterator<>() {
            private boolean pending;

            @Override
            public boolean hasNext() {
                checkOpen();
                if (pending) {
                    return true;
                }
                if (epochDone || endOfStream) {
                    return false;
                }
                closeCurrent();
                RecordTag t = read();
                pending = t != null && t.kind() == RecordTag.Kind.BATCH;
                return pending;
            }

            @Override
            public Batch next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("epoch " + epoch + " has no more batches");
                }
                pending = false;
                return current;
            }
        };
    }

    /**
     * Reads messages up to the next batch or epoch/stream end; sets {@link #current} for a batch.
     * Returns the tag that stopped it, or null at the end of the stream.
     */
    private RecordTag read() {
        while (true) {
            DoGetReader.Frame frame = await(silenceNanos, reader::next);
            if (frame == null) {
                endOfStream = true;
                epochDone = true;
                return null;
            }
            RecordTag tag;
            boolean loaded = false;
            try {
                tag = RecordTag.decode(frame.appMetadata());
                if (tag.kind() == RecordTag.Kind.BATCH) {
                    load(frame);
                    loaded = true;
                }
            } catch (IllegalArgumentException e) {
                throw new ProtocolException("server " + address + " sent " + e.getMessage(), e);
            } finally {
                if (!loaded) {
                    frame.release();
                }
            }
            switch (tag.kind()) {
                case HEARTBEAT -> {
                    continue;
                }
                case END_OF_EPOCH -> {
                    epochDone = true;
                    epoch = tag.epoch();
                    return tag;
                }
                case END_OF_STREAM -> {
                    endOfStream = true;
                    epochDone = true;
                    return tag;
                }
                case BATCH -> {
                    int n = root.getRowCount();
                    if (n != tag.samples()) {
                        throw new ProtocolException(
                                "server " + address + " tagged a batch of " + tag.samples() + " samples but sent " + n);
                    }
                    List<MemorySegment> data = new ArrayList<>(specs.size());
                    for (int i = 0; i < specs.size(); i++) {
                        data.add(TensorColumns.values(root, i, specs.get(i)));
                    }
                    epoch = tag.epoch();
                    boolean confined = options.threadConfinedBatches();
                    Thread taker = Thread.currentThread();
                    // a confined batch released elsewhere keeps its views open: no block may be freed from then on
                    Runnable released = confined
                            ? () -> {
                                if (Thread.currentThread() != taker) {
                                    recycling.keepAll();
                                }
                            }
                            : null;
                    current = Batch.lent(
                            specs,
                            data,
                            n,
                            tag.epoch(),
                            tag.index(),
                            tag.sampleStart(),
                            "batch " + tag.index() + " of epoch " + tag.epoch() + " from " + address,
                            released,
                            confined);
                    currentPosition = tag.streamPosition();
                    return tag;
                }
            }
        }
    }

    /** Loads a batch message's columns into the root, which takes over the message's body. */
    private void load(DoGetReader.Frame frame) {
        Message m = header(frame);
        if (m == null || m.headerType() != MessageHeader.RecordBatch || frame.body() == null) {
            throw new IllegalArgumentException("a batch tag on a message without a record batch");
        }
        try (ArrowRecordBatch batch = MessageSerializer.deserializeRecordBatch(m, frame.body())) {
            loader.load(batch);
        } catch (IOException e) {
            throw new IllegalArgumentException("an unreadable record batch: " + e.getMessage(), e);
        }
    }

    private interface Call<T> {
        T call();
    }

    /** Runs a blocking stream call under the watchdog: a server silent past {@code limitNanos} is cancelled. */
    private <T> T await(long limitNanos, Call<T> call) {
        deadlineNanos = limitNanos;
        waitingSince = System.nanoTime();
        try {
            return call.call();
        } catch (FlightRuntimeException e) {
            throw translate(e);
        } finally {
            waitingSince = 0;
        }
    }

    /**
     * Cancels the call when the server has been silent past the limit. Silence counts only while this process
     * runs: after a pause of its own (SIGSTOP, a long GC, a debugger) the watchdog ticks late, and what the
     * server sent meanwhile still waits unread in the socket; such a late tick starts the count afresh, so the
     * event loop drains that first.
     */
    private void check(DoGetReader r) {
        long now = System.nanoTime();
        if (now - lastTickNanos > PAUSED_AFTER_NANOS) {
            resumedNanos = now;
        }
        lastTickNanos = now;
        long since = waitingSince;
        if (since != 0 && now - Math.max(Math.max(since, lastBytesNanos), resumedNanos) > deadlineNanos && !timedOut) {
            timedOut = true;
            r.cancel("no word from the server for " + deadlineNanos / 1_000_000 + " ms");
        }
    }

    private TensorSocketException translate(FlightRuntimeException e) {
        String where = "server " + address;
        String msg =
                e.status().description() == null ? e.getMessage() : e.status().description();
        if (timedOut) {
            return new ProducerGoneException(
                    where + " went silent for more than " + deadlineNanos / 1_000_000
                            + " ms (no batch, no heartbeat): it vanished or the network is down",
                    e);
        }
        FlightStatusCode code = e.status().code();
        return switch (code) {
            case UNAUTHENTICATED, UNAUTHORIZED ->
                new PermissionDeniedException(where + " refused the connection: " + msg, e);
            case NOT_FOUND -> new ProducerNotFoundException(where + ": " + msg, e);
            case INVALID_ARGUMENT -> new RequestRejectedException(where + " rejected the request: " + msg, e);
            case RESOURCE_EXHAUSTED -> new ConsumerEvictedException(where + ": " + msg, e);
            case TIMED_OUT -> new TensorSocketTimeoutException(where + ": " + msg, e);
            case UNAVAILABLE ->
                fromTheProducer(e)
                        ? new ProducerGoneException(where + ": " + msg.substring(PRODUCER_GONE.length()), e)
                        : new ProducerGoneException(
                                where + " is unreachable or went away: " + msg
                                        + " (is `serve --flight` running there, and the address and TLS setting right?)",
                                e);
            default -> new ProducerFailedException(where + " failed: " + code + ": " + msg, e);
        };
    }

    // ------------------------------------------------------------------------------------------------ close

    private void closeCurrent() {
        Batch b = current;
        current = null;
        if (b != null) {
            b.close();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this consumer of " + address + " is closed");
        }
    }

    /** Releases the current batch and ends the stream; the server closes its side at once. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeCurrent();
        synchronized (this) {
            if (actions != null) {
                try {
                    actions.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        reader.close();
        root.close();
        shutdown();
    }

    private void shutdown() {
        watchdog.shutdownNow();
        channel.shutdownNow();
        eventLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        try {
            allocator.close();
        } catch (IllegalStateException leak) {
            // buffers still held by gRPC after a cancel are freed with the channel
        }
        recycling.close();
    }
}
