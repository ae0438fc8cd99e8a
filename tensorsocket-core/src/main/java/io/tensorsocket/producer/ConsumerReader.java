package io.tensorsocket.producer;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.protocol.Message;
import java.io.IOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads what every attached consumer sends (RELEASE, PROGRESS, heartbeat answers, BYE) on one thread, over
 * one selector: a wake-up drains every connection that has data and applies each consumer's releases
 * under one acquisition of the producer's lock. Serving one more consumer thus costs a read per wake-up,
 * not a thread of its own to wake, schedule and park again for every release; and while the producer
 * waits for no slot, wake-ups are spaced by {@link #GATHER_NANOS} so that one reads many releases.
 */
final class ConsumerReader implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ConsumerReader.class);
    /**
     * How long releases may gather while the producer needs none of them: with K consumers one wake-up
     * then reads what K wake-ups would. A consumer that leaves or dies is noticed at most this much later.
     */
    private static final long GATHER_NANOS = 1_000_000L;
    /** Why a consumer that sent BYE left. */
    static final String GOODBYE = "said goodbye";

    private final ProducerCore core;
    private final Selector selector;
    private final ConcurrentLinkedQueue<ConsumerSession> joining = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile boolean closed;
    /** Releases read from one consumer in one wake-up, applied together. */
    private long[] releases = new long[16];

    ConsumerReader(ProducerCore core) throws IOException {
        this.core = core;
        this.selector = Selector.open();
        this.thread = Thread.ofPlatform()
                .daemon()
                .name("tensorsocket-consumer-reader")
                .start(this::run);
        core.onReleaseWanted(() -> LockSupport.unpark(thread));
    }

    /** Starts reading {@code s}, a consumer that has joined. */
    void add(ConsumerSession s) {
        joining.add(s);
        selector.wakeup();
    }

    private void run() {
        try {
            while (!closed) {
                selector.select();
                for (ConsumerSession s = joining.poll(); s != null; s = joining.poll()) {
                    register(s);
                }
                for (SelectionKey k : selector.selectedKeys()) {
                    drain((ConsumerSession) k.attachment());
                }
                selector.selectedKeys().clear();
                if (!core.awaitingRelease() && !closed) {
                    LockSupport.parkNanos(this, GATHER_NANOS); // cut short when the producer starts waiting
                }
            }
        } catch (IOException | ClosedSelectorException e) {
            if (!closed) {
                log.error("reading consumers failed; they will be disconnected", e);
                core.shutdown("reading consumers failed: " + e, null);
            }
        } catch (RuntimeException | Error e) { // a defect: say so and stop, rather than leave everyone waiting
            log.error("reading consumers failed; they will be disconnected", e);
            core.shutdown(
                    "reading consumers failed: " + e,
                    new Message.Error(Message.ErrorCode.INTERNAL, "the producer failed reading its consumers: " + e));
            throw e;
        }
    }

    private void register(ConsumerSession s) {
        try {
            s.channel.channel().configureBlocking(false);
            s.channel.channel().register(selector, SelectionKey.OP_READ, s);
        } catch (ClosedChannelException | CancelledKeyException e) {
            core.leave(s, "connection closed"); // evicted or gone before it was read
        } catch (IOException e) {
            core.leave(s, "connection failed: " + e.getMessage());
        }
    }

    /** Reads every whole frame {@code s} has sent, then applies its releases at once. */
    private void drain(ConsumerSession s) {
        int n = 0;
        String leave = null;
        try {
            // No read after a BYE: a consumer that closes with frames unread resets the connection, and the read
            // that follows its BYE would report a lost connection instead of a goodbye.
            for (Message m; leave == null && (m = s.channel.readAvailable()) != null; ) {
                switch (m) {
                    case Message.Release r -> {
                        if (n == releases.length) {
                            releases = Arrays.copyOf(releases, 2 * n);
                        }
                        releases[n++] = r.seq();
                    }
                    case Message.Progress p -> core.progress(s, p);
                    case Message.Heartbeat h -> s.heartbeatAnswered();
                    case Message.Bye b -> leave = GOODBYE;
                    case Message.Moved mv -> {
                        String wrong = core.moved(s, mv.position());
                        if (wrong != null) {
                            log.warn("{} {}; disconnecting it", s.describe(), wrong);
                            s.send(new Message.Error(Message.ErrorCode.BAD_FRAME, "you " + wrong));
                            leave = "protocol violation";
                        }
                    }
                    default -> {
                        s.send(new Message.Error(
                                Message.ErrorCode.BAD_FRAME,
                                "unexpected " + m.getClass().getSimpleName() + " from a consumer"));
                        leave = "protocol violation";
                    }
                }
            }
            if (leave == null && s.channel.peerClosed()) {
                leave = "connection closed";
            }
        } catch (ProtocolException | ProtocolVersionException e) {
            log.warn("{} sent an invalid frame: {}; disconnecting it", s.describe(), e.getMessage());
            s.send(new Message.Error(Message.ErrorCode.BAD_FRAME, e.getMessage()));
            leave = "protocol violation";
        } catch (IOException e) {
            leave = "connection lost"; // reset, or EOF in the middle of a frame: the peer went away
        }
        long bad = n > 0 ? core.release(s, releases, n) : -1;
        if (bad >= 0) {
            String msg = "released batch " + bad + " which it does not hold";
            log.warn("{} {}; disconnecting it", s.describe(), msg);
            s.send(new Message.Error(Message.ErrorCode.BAD_FRAME, "you " + msg));
            leave = "protocol violation";
        }
        if (leave != null) {
            core.leave(s, leave);
        }
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        LockSupport.unpark(thread);
        try {
            thread.join(1000);
            selector.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException ignored) {
            // nothing left to release
        }
    }
}
