package io.tensorsocket.producer;

import io.tensorsocket.JobRank;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.RankShare;
import io.tensorsocket.stream.StartPoint;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.Phaser;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import jdk.net.ExtendedSocketOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producer's control socket: accepts consumers and reads their HELLO (bounded by a timeout), one
 * virtual thread per connection, then hands each consumer that joined to the {@link ConsumerReader}, which
 * reads what it sends until it leaves. A connection that sends garbage is answered with an error and closed
 * without disturbing anyone else.
 *
 * <p>Closing answers everyone who reached the socket: the socket's name goes first, so no one new connects, then the
 * connections still waiting to be accepted are accepted and each told why it cannot join (what the attached consumers
 * were told: a loader's failure, the stream's end), within {@link #ANSWER_WINDOW}. A consumer launched in the same
 * moment as the producer fails hears the failure, never a reset connection.
 */
public final class ProducerServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ProducerServer.class);

    /** How long closing waits for the connections that reached the socket to be answered. */
    static final Duration ANSWER_WINDOW = Duration.ofSeconds(1);
    /** The pause before a failed accept is tried again. */
    private static final long ACCEPT_RETRY_NANOS = 100_000_000L;

    private final Path socket;
    private final ServerSocketChannel server;
    private final Selector arrivals;
    /** One party per connection not yet answered (joined or refused), and one for the server. */
    private final Phaser unanswered = new Phaser(1);

    private final ProducerCore core;
    private final Duration helloTimeout;
    private final Function<StartPoint, Message.Welcome> welcomeTemplate;
    private final ScheduledExecutorService timer;
    private final ScheduledExecutorService heartbeats;
    /** A consumer that was sent nothing for this long gets a HEARTBEAT (docs/PROTOCOL.md, "Liveness"). */
    static final long HEARTBEAT_NANOS = 1_000_000_000L;

    private final AtomicInteger ids = new AtomicInteger();
    private final Thread acceptor;
    private final ConsumerReader reader;
    private volatile boolean closed;

    public ProducerServer(
            Path socket,
            ProducerCore core,
            Duration helloTimeout,
            Function<StartPoint, Message.Welcome> welcomeTemplate)
            throws IOException {
        this.core = core;
        this.helloTimeout = helloTimeout;
        this.welcomeTemplate = welcomeTemplate;
        this.socket = socket;
        Files.deleteIfExists(socket);
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        server.configureBlocking(false);
        arrivals = Selector.open();
        server.register(arrivals, SelectionKey.OP_ACCEPT);
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tensorsocket-hello-timer");
            t.setDaemon(true);
            return t;
        });
        reader = new ConsumerReader(core);
        acceptor = Thread.ofPlatform().daemon().name("tensorsocket-accept").start(this::acceptLoop);
        // Its own thread, never the loader's: a loader that takes long for a batch must not look like a hang.
        heartbeats = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tensorsocket-heartbeat");
            t.setDaemon(true);
            return t;
        });
        heartbeats.scheduleWithFixedDelay(
                this::heartbeat, HEARTBEAT_NANOS / 4, HEARTBEAT_NANOS / 4, TimeUnit.NANOSECONDS);
    }

    private void heartbeat() {
        try {
            core.heartbeat(HEARTBEAT_NANOS);
        } catch (RuntimeException e) {
            log.warn("sending heartbeats failed: {}", e.toString()); // the next round tries again
        }
    }

    private void acceptLoop() {
        try {
            while (!closed) {
                arrivals.select();
                arrivals.selectedKeys().clear();
                acceptWaiting();
            }
        } catch (ClosedSelectorException e) {
            // closed under the loop
        } catch (IOException e) {
            if (!closed) {
                log.warn("waiting for consumers failed: {}", e.toString());
            }
        }
    }

    /** Accepts every connection waiting, each served on a thread of its own. */
    private void acceptWaiting() {
        while (true) {
            SocketChannel ch;
            try {
                ch = server.accept(); // a blocking channel, whatever the server's mode
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                // Out of descriptors, say: the connection stays queued and is tried again after a pause, not in a
                // loop as tight as the selector's.
                log.warn("accept failed: {}", e.toString());
                LockSupport.parkNanos(ACCEPT_RETRY_NANOS);
                return;
            }
            if (ch == null) {
                return;
            }
            unanswered.register();
            Thread.ofVirtual().name("tensorsocket-conn").start(() -> {
                try {
                    serve(new MessageChannel(ch));
                } finally {
                    unanswered.arriveAndDeregister();
                }
            });
        }
    }

    private void serve(MessageChannel ch) {
        ScheduledFuture<?> deadline = timer.schedule(ch::close, helloTimeout.toMillis(), TimeUnit.MILLISECONDS);
        try {
            Message first = ch.read();
            deadline.cancel(false);
            if (first == null) {
                ch.close();
                return;
            }
            if (first instanceof Message.StatusRequest) {
                Message.Welcome w = welcomeTemplate.apply(StartPoint.of(StartMode.EPOCH_START, 0, 0));
                ch.sendQuietly(new Message.Status(core.status(w.producerPid(), w.source())));
                ch.close();
                return;
            }
            Message.Resume resume = null;
            if (first instanceof Message.Resume r) { // a consumer continuing its epoch from a checkpoint
                resume = r;
                deadline = timer.schedule(ch::close, helloTimeout.toMillis(), TimeUnit.MILLISECONDS);
                first = ch.read();
                deadline.cancel(false);
                if (first == null) {
                    ch.close();
                    return;
                }
            }
            if (!(first instanceof Message.Hello hello)) {
                reject(
                        ch,
                        Message.ErrorCode.BAD_FRAME,
                        "expected HELLO (after a RESUME, or alone) or STATUS_REQUEST as the first message, got "
                                + first.getClass().getSimpleName());
                return;
            }
            String problem = checkRequest(hello);
            if (problem != null) {
                reject(ch, Message.ErrorCode.BAD_REQUEST, problem);
                return;
            }
            int id = ids.incrementAndGet();
            ConsumerSession joined;
            if (resume != null) {
                joined = core.resume(id, ch, hello, resume, peerUser(ch), welcomeTemplate);
            } else if (hello.inJob()) {
                JobRoster.Candidate rank = core.joinRank(id, ch, hello, peerUser(ch), welcomeTemplate);
                joined = rank == null ? null : core.awaitJob(rank);
            } else {
                joined = core.join(id, ch, hello, peerUser(ch), welcomeTemplate);
            }
            if (joined != null) {
                reader.add(joined);
            }
        } catch (ProtocolVersionException e) {
            reject(ch, Message.ErrorCode.VERSION_MISMATCH, e.getMessage());
        } catch (ProtocolException e) {
            log.warn("dropping a connection that sent an invalid frame: {}", e.getMessage());
            reject(ch, Message.ErrorCode.BAD_FRAME, e.getMessage());
        } catch (IOException e) {
            ch.close(); // EOF mid-frame or reset: the peer went away
        } catch (InterruptedException e) {
            ch.close(); // the producer is closing
        } catch (RuntimeException | LinkageError e) {
            // A bug, or a runtime that lacks a class, must not leave the peer waiting for an answer that never
            // comes: tell it, then drop it.
            log.error("connection thread failed; answering the peer with an error and closing the connection", e);
            reject(ch, Message.ErrorCode.INTERNAL, "the producer failed while serving this connection: " + e);
        } finally {
            deadline.cancel(false);
        }
    }

    /** The connecting process's user name, from the kernel (SO_PEERCRED), or "?" where unavailable. */
    private static String peerUser(MessageChannel ch) {
        try {
            return ch.channel()
                    .getOption(ExtendedSocketOptions.SO_PEERCRED)
                    .user()
                    .getName();
        } catch (IOException | UnsupportedOperationException e) {
            return "?";
        }
    }

    private String checkRequest(Message.Hello hello) {
        int b = hello.batchSize();
        if (b < 1) {
            return "batch size " + b + " is invalid: a consumer's batch size must be at least 1";
        }
        int w = hello.worldSize();
        if (hello.inJob()
                ? hello.job().length() > JobRank.MAX_JOB || w < 1 || hello.rank() < 0 || hello.rank() >= w
                : w != 1 || hello.rank() != 0) {
            return "rank " + hello.rank() + " of " + w
                    + (hello.inJob() ? " of job '" + hello.job() + "'" : " with no job")
                    + " is invalid: a job's name has 1 to " + JobRank.MAX_JOB
                    + " characters and its ranks are numbered 0 to world size - 1";
        }
        int max = core.maxConsumerBatch();
        long span = new RankShare(hello.rank(), w).span(b); // a rank's batch spans worldSize positions per sample
        if (span > max) {
            return "batch size " + b + (w > 1 ? " of a rank of " + w : "") + " needs up to "
                    + core.slotsNeeded((int) Math.min(Integer.MAX_VALUE, span)) + " arena slots at once, more than this"
                    + " producer can ever hold; use a batch size of at most " + (w > 1 ? (max - 1) / w + 1 : max)
                    + ", or restart the producer with a larger arena";
        }
        return null;
    }

    private static void reject(MessageChannel ch, Message.ErrorCode code, String message) {
        ch.sendQuietly(new Message.Error(code, message));
        ch.close();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Files.deleteIfExists(socket); // no one new connects; those already queued are answered below
        } catch (IOException e) {
            log.debug("could not remove {}: {}", socket, e.toString());
        }
        arrivals.wakeup();
        try {
            acceptor.join(ANSWER_WINDOW.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        acceptWaiting();
        try {
            unanswered.awaitAdvanceInterruptibly(
                    unanswered.arriveAndDeregister(), ANSWER_WINDOW.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (TimeoutException e) {
            log.debug("{} connections still unanswered at close", unanswered.getRegisteredParties());
        }
        try {
            server.close();
            arrivals.close();
        } catch (IOException ignored) {
            // nothing more to release
        }
        timer.shutdownNow();
        heartbeats.shutdownNow();
        reader.close();
    }
}
