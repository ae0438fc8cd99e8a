package io.tensorsocket.flight;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.WireFormat;
import io.tensorsocket.spi.RelayBoundaries;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.ActionType;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer.StreamListener;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;

/**
 * Serves one local producer to consumers on other hosts over Apache Arrow Flight. Each DoGet with a
 * {@link StreamRequest} ticket becomes one {@link StreamSession}: its own consumer of the local producer,
 * streamed as Arrow record batches ({@link TensorColumns}, {@link RecordTag}, {@link StreamHeader}).
 *
 * <p>It binds 127.0.0.1 unless told otherwise; binding any address that is not loopback requires a
 * shared token (bearer authentication). With a certificate chain and key it speaks TLS
 * ({@code grpc+tls://}).
 *
 * <p>Besides DoGet it answers the action {@value #STATUS_ACTION}: one result whose body is the producer's
 * STATUS frame of the local protocol (docs/PROTOCOL.md, section 5), so {@code tensorsocket status
 * grpc://...} shows what {@code status} shows on the serving host, remote consumers with their peers; and, serving a
 * producer of this JVM ({@link Builder#producer}), the action {@value BoundaryAction#TYPE}, by which a relay keeps
 * its mid-epoch joiners' epochs exact.
 *
 * <pre>{@code
 * try (TensorProducer p = TensorProducer.builder().name("train").source(src).build().start();
 *      FlightServe f = FlightServe.builder().producer(p).port(8815).build().start()) {
 *     p.await(...);
 * }
 * }</pre>
 */
public final class FlightServe implements AutoCloseable {
    /** How long a remote's connection may leave sent data unacknowledged before it is dropped. */
    public static final Duration DEFAULT_LINK_TIMEOUT = Duration.ofSeconds(2);
    /**
     * How many bytes each connection queues for its socket before gRPC holds its streams back: the low and high
     * marks of its Netty outbound buffer. gRPC's HTTP/2 flow controller hands the socket no more than the channel
     * takes before it turns unwritable, so at Netty's default (64 KiB) a 0.8 MB batch left in 12 writes, each
     * after the last had drained: two event-loop wake-ups and a system call per 64 KiB on each side. At 4 MiB a
     * batch of up to that size leaves in one write. What is queued is the batches' own buffers (zero copy), so a
     * higher mark costs frame headers, not copies.
     */
    static final WriteBufferWaterMark SEND_QUEUE = new WriteBufferWaterMark(2 << 20, 4 << 20);
    /** The Flight action that answers the producer's status. */
    public static final String STATUS_ACTION = "status";
    /** The remote peer's address, set on every call's gRPC context by {@link #PEER_INTERCEPTOR}. */
    private static final Context.Key<SocketAddress> PEER = Context.key("tensorsocket-peer");

    private static final ServerInterceptor PEER_INTERCEPTOR = new ServerInterceptor() {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
                ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            SocketAddress peer = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
            return Contexts.interceptCall(Context.current().withValue(PEER, peer), call, headers, next);
        }
    };
    private final String producerName;
    private final Path producerDirectory;
    private final Location location;
    // each batch is staged in one send buffer of its size; recycling them keeps the streams off fresh memory
    private final RecyclingAllocations recycling = new RecyclingAllocations(RecyclingAllocations.KEEP_BYTES);
    private final BufferAllocator allocator = RecyclingAllocations.rootAllocator(recycling);
    private final ScheduledExecutorService timer;
    private final FlightServer server;
    private final AtomicLong streams = new AtomicLong();
    /** The producer served, where this server runs beside it (then it answers {@link BoundaryAction}), else null. */
    private final TensorProducer producer;
    /** The producer's ids of the consumers of this server's streams now. */
    private final Set<Integer> streaming = ConcurrentHashMap.newKeySet();
    /** The epoll event loop the server runs on, or null where epoll is not available (then no link timeout). */
    private final EventLoopGroup eventLoop;

    private final LinkWatch linkWatch;

    private FlightServe(Builder b) throws IOException {
        this.producerName = b.name;
        this.producerDirectory = b.directory;
        this.producer = b.producer;
        boolean tls = b.certChain != null;
        this.location = tls ? Location.forGrpcTls(b.host, b.port) : Location.forGrpcInsecure(b.host, b.port);
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tensorsocket-flight-heartbeat");
            t.setDaemon(true);
            return t;
        });
        GrpcLogFilter.install();
        FlightServer.Builder fb = FlightServer.builder(allocator, location, new Producer());
        this.eventLoop = Epoll.isAvailable() ? new MultiThreadIoEventLoopGroup(EpollIoHandler.newFactory()) : null;
        this.linkWatch = eventLoop != null ? new LinkWatch(b.linkTimeout, timer) : null;
        Consumer<NettyServerBuilder> configure = nb -> {
            nb.intercept(PEER_INTERCEPTOR);
            nb.withChildOption(ChannelOption.WRITE_BUFFER_WATER_MARK, SEND_QUEUE);
            if (eventLoop != null) {
                nb.channelFactory(this::serverChannel)
                        .bossEventLoopGroup(eventLoop)
                        .workerEventLoopGroup(eventLoop);
            }
        };
        fb.transportHint("grpc.builderConsumer", configure);
        if (b.token != null) {
            fb.headerAuthenticator(new BearerAuth(b.token));
        }
        if (tls) {
            fb.useTls(b.certChain.toFile(), b.key.toFile());
        }
        this.server = fb.build();
    }

    /**
     * The channel to listen with. Each connection it accepts writes batches from their own memory
     * ({@link DirectWrites}) and is watched until it closes ({@link LinkWatch}: a remote behind a dead link is
     * dropped after the link timeout). Accepted connections pass through the listening channel's pipeline before
     * gRPC sets them up.
     */
    private ServerChannel serverChannel() {
        EpollServerSocketChannel server = new EpollServerSocketChannel();
        server.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object accepted) {
                if (accepted instanceof EpollSocketChannel c) {
                    c.pipeline().addFirst(DirectWrites.INSTANCE);
                    linkWatch.watch(c);
                }
                ctx.fireChannelRead(accepted);
            }
        });
        return server;
    }

    /** A builder; name the producer with {@link Builder#producer} or {@link Builder#directory}. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts listening.
     *
     * @throws IOException if the address cannot be bound (in use, not local)
     */
    public FlightServe start() throws IOException {
        try {
            server.start();
        } catch (IOException e) {
            throw new IOException(
                    "cannot listen on " + location.getUri().getHost() + ":"
                            + location.getUri().getPort() + " for Flight: " + e.getMessage()
                            + " (is the port in use, or the address not this host's?)",
                    e);
        }
        return this;
    }

    /** The port listened on (the real one when 0 was asked for). */
    public int port() {
        return server.getPort();
    }

    /** The address remote consumers use: {@code grpc://HOST:PORT/NAME} or {@code grpc+tls://...}. */
    public RemoteAddress address() {
        return new RemoteAddress(
                location.getUri().getScheme().contains("tls"), location.getUri().getHost(), port(), producerName);
    }

    /** Remote streams opened so far. */
    public long streamsOpened() {
        return streams.get();
    }

    /** Stops listening and ends every remote stream (their consumers see an error). */
    @Override
    public void close() {
        server.shutdown();
        try {
            if (!server.awaitTermination(2, TimeUnit.SECONDS)) {
                server.close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (linkWatch != null) {
            linkWatch.close();
        }
        timer.shutdownNow();
        if (eventLoop != null) {
            eventLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        recycling.close();
    }

    private final class Producer extends NoOpFlightProducer {
        @Override
        public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            StreamRequest request;
            try {
                request = StreamRequest.parse(ticket.getBytes());
            } catch (IllegalArgumentException e) {
                listener.error(CallStatus.INVALID_ARGUMENT
                        .withDescription("bad TensorSocket ticket: " + e.getMessage())
                        .toRuntimeException());
                return;
            }
            if (!request.name().equals(producerName)) {
                listener.error(CallStatus.NOT_FOUND
                        .withDescription(
                                "this server serves producer '" + producerName + "', not '" + request.name() + "'")
                        .toRuntimeException());
                return;
            }
            streams.incrementAndGet();
            new StreamSession(producerDirectory, request, listener, allocator, timer, peer(), streaming).start();
        }

        @Override
        public void listActions(CallContext context, StreamListener<ActionType> listener) {
            listener.onNext(new ActionType(STATUS_ACTION, "the producer's STATUS frame (docs/PROTOCOL.md)"));
            listener.onNext(new ActionType(BoundaryAction.TYPE, "keep a relay joiner's boundary (docs/PROTOCOL.md)"));
            listener.onCompleted();
        }

        @Override
        public void doAction(CallContext context, Action action, StreamListener<Result> listener) {
            if (action.getType().equals(BoundaryAction.TYPE)) {
                boundary(action, listener);
                return;
            }
            if (!action.getType().equals(STATUS_ACTION)) {
                listener.onError(CallStatus.UNIMPLEMENTED
                        .withDescription("unknown action '" + action.getType() + "'; this server answers '"
                                + STATUS_ACTION + "' and '" + BoundaryAction.TYPE + "'")
                        .toRuntimeException());
                return;
            }
            try {
                ProducerStatus s = TensorProducer.queryStatus(producerDirectory, Duration.ofSeconds(5));
                ByteBuffer frame = WireFormat.encode(new Message.Status(s));
                byte[] body = new byte[frame.remaining()];
                frame.get(body);
                listener.onNext(new Result(body));
                listener.onCompleted();
            } catch (TensorSocketException e) {
                listener.onError(CallStatus.UNAVAILABLE
                        .withDescription("producer '" + producerName + "' did not answer: " + e.getMessage())
                        .toRuntimeException());
            }
        }
    }

    /** Answers a relay's {@link BoundaryAction} for a consumer of this server's own streams. */
    private void boundary(Action action, StreamListener<Result> listener) {
        BoundaryAction.Request r;
        try {
            r = BoundaryAction.decode(action.getBody());
        } catch (IllegalArgumentException e) {
            listener.onError(
                    CallStatus.INVALID_ARGUMENT.withDescription(e.getMessage()).toRuntimeException());
            return;
        }
        UpstreamBoundaries.Answer a = UpstreamBoundaries.Answer.UNAVAILABLE;
        if (producer != null && streaming.contains(r.consumerId())) {
            if (r.op() == BoundaryAction.KEEP) {
                a = RelayBoundaries.keep(producer, r.consumerId(), r.epoch(), r.sample());
            } else {
                RelayBoundaries.release(producer, r.consumerId(), r.sample());
                a = UpstreamBoundaries.Answer.KEPT;
            }
        }
        listener.onNext(new Result(BoundaryAction.answer(a)));
        listener.onCompleted();
    }

    /** How status shows a remote consumer: {@code flight HOST:PORT} of its peer. */
    private static String peer() {
        SocketAddress a = PEER.get();
        if (a instanceof InetSocketAddress i) {
            String host = i.getAddress() != null ? i.getAddress().getHostAddress() : i.getHostString();
            return ConsumerOptions.REMOTE_CLIENT_PREFIX + (host.contains(":") ? "[" + host + "]" : host) + ":"
                    + i.getPort();
        }
        return ConsumerOptions.REMOTE_CLIENT_PREFIX + (a == null ? "unknown peer" : a.toString());
    }

    /** Options of a {@link FlightServe}. */
    public static final class Builder {
        private String name;
        private Path directory;
        private TensorProducer producer;
        private String host = "127.0.0.1";
        private int port = 0;
        private String token;
        private Path certChain;
        private Path key;
        private Duration linkTimeout = DEFAULT_LINK_TIMEOUT;

        private Builder() {}

        /**
         * How long data sent to a remote may stay unacknowledged before its connection is dropped (default
         * {@link #DEFAULT_LINK_TIMEOUT}): a remote behind a cut link then no longer holds the producer's other
         * consumers up (see {@link LinkWatch}). On Linux only; elsewhere the producer's stall timeout applies.
         */
        public Builder linkTimeout(Duration timeout) {
            if (timeout == null || timeout.toMillis() < 1 || timeout.toMillis() > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("the link timeout must be 1 ms or more, not " + timeout);
            }
            this.linkTimeout = timeout;
            return this;
        }

        /** Serves this running producer. */
        public Builder producer(TensorProducer producer) {
            this.name = producer.name();
            this.directory = producer.directory();
            this.producer = producer;
            return this;
        }

        /** Serves the producer in {@code directory}, which remote consumers reach as {@code name}. */
        public Builder directory(String name, Path directory) {
            this.name = Objects.requireNonNull(name);
            this.directory = Objects.requireNonNull(directory);
            this.producer = null;
            return this;
        }

        /** Address to bind (default 127.0.0.1); one that is not loopback needs {@link #token}. */
        public Builder host(String host) {
            this.host = Objects.requireNonNull(host);
            return this;
        }

        /** Port to bind; 0 picks a free one (default). */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port " + port + " is not in 0..65535");
            }
            this.port = port;
            return this;
        }

        /** The shared token every remote consumer must present (bearer authentication). */
        public Builder token(String token) {
            if (token != null && token.isBlank()) {
                throw new IllegalArgumentException("the shared token is empty");
            }
            this.token = token;
            return this;
        }

        /** Reads the shared token from the first line of a file. */
        public Builder tokenFile(Path file) throws IOException {
            String t = Files.readString(file).strip();
            if (t.isEmpty()) {
                throw new IllegalArgumentException("token file " + file + " is empty");
            }
            return token(t);
        }

        /** Speak TLS with this PEM certificate chain and PEM private key (PKCS#8). */
        public Builder tls(Path certChain, Path key) {
            for (Path p : new Path[] {certChain, key}) {
                if (!Files.isReadable(p)) {
                    throw new IllegalArgumentException("TLS file " + p + " does not exist or is not readable");
                }
            }
            this.certChain = certChain;
            this.key = key;
            return this;
        }

        /** Builds the server (call {@link FlightServe#start()}). */
        public FlightServe build() throws IOException {
            if (name == null) {
                throw new IllegalStateException("name the producer to serve: producer(...) or directory(...)");
            }
            if (token == null && !isLoopback(host)) {
                throw new IllegalArgumentException("serving on " + host + " is reachable from other hosts and needs a"
                        + " shared token: pass one (--flight-token or --flight-token-file), or bind 127.0.0.1");
            }
            return new FlightServe(this);
        }

        private static boolean isLoopback(String host) {
            try {
                return InetAddress.getByName(host).isLoopbackAddress();
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("cannot resolve Flight host '" + host + "'", e);
            }
        }
    }
}
