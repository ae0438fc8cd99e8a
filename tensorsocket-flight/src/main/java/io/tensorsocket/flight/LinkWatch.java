package io.tensorsocket.flight;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.epoll.EpollTcpInfo;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drops a remote consumer's connection once what the server sent it has gone unacknowledged for the link
 * timeout: its link was cut or its host vanished. Its streams then end and release what they held, so a
 * dead link holds the producer's other consumers up for seconds rather than the stall timeout. A remote that
 * is alive but does not read (paused by SIGSTOP, a debugger, a long GC; or slow) is not dropped: its kernel
 * still acknowledges, even while its receive window is closed, and the producer's stall timeout judges it as
 * it judges a local consumer.
 *
 * <p>The kernel's TCP_USER_TIMEOUT cannot tell the two apart (since Linux 5.11 it also ends connections
 * whose window stays closed), so this reads each connection's {@code TCP_INFO} every quarter second: something
 * awaiting an answer and no acknowledgement for longer than the timeout ({@code tcpi_last_ack_recv}). What
 * awaits an answer is data in flight ({@code tcpi_unacked > 0}), or, where the remote's receive window is
 * closed (it read slower than the server sent), the kernel's window probes ({@code tcpi_probes > 0}, reset by
 * any acknowledgement: a paused remote's kernel answers them, a cut link does not). A stream blocked on the
 * remote's HTTP/2 flow control sends nothing to acknowledge: after half a second of silence both ways on a connection
 * with streams this sends an HTTP/2 PING, which is then in flight.
 */
final class LinkWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LinkWatch.class);
    private static final long CHECK_EVERY_MS = 250;
    /** How long a connection may have sent nothing and heard nothing before it is probed. */
    static final long PROBE_AFTER_MS = 500;
    /**
     * The payload of this class's PINGs: gRPC's own keepalive payload, whose answer gRPC's handler takes silently (it
     * warns about an answer to any other PING it did not send).
     */
    private static final long PING_PAYLOAD = 0xDEADL;

    private final Set<EpollSocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final long timeoutMs;
    private final ScheduledFuture<?> task;
    private final EpollTcpInfo info = new EpollTcpInfo();

    LinkWatch(Duration timeout, ScheduledExecutorService timer) {
        this.timeoutMs = timeout.toMillis();
        this.task = timer.scheduleWithFixedDelay(this::check, CHECK_EVERY_MS, CHECK_EVERY_MS, TimeUnit.MILLISECONDS);
    }

    /** Watches connection {@code c} until it closes. */
    void watch(EpollSocketChannel c) {
        connections.add(c);
        c.closeFuture().addListener(f -> connections.remove(c));
    }

    @SuppressWarnings("ModifyCollectionInEnhancedForLoop") // a concurrent set
    private void check() {
        for (EpollSocketChannel c : connections) {
            if (!c.isActive()) {
                continue;
            }
            try {
                c.tcpInfo(info);
            } catch (RuntimeException e) {
                continue; // closed meanwhile
            }
            if ((info.unacked() > 0 || info.probes() > 0) && info.lastAckRecv() > timeoutMs) {
                LOG.info(
                        "dropping the connection of remote {}: nothing sent to it was acknowledged for {} ms (its link"
                                + " is cut or its host is gone); its streams end and release what they held",
                        c.remoteAddress(),
                        info.lastAckRecv());
                connections.remove(c);
                // at once, past gRPC's handler: its close would shut down gracefully, waiting for the very
                // streams that wait on the dead link
                c.eventLoop().execute(() -> c.unsafe().close(c.unsafe().voidPromise()));
            } else if (info.unacked() == 0
                    && info.probes() == 0
                    && info.lastDataSent() >= PROBE_AFTER_MS
                    && info.lastAckRecv() >= PROBE_AFTER_MS) {
                c.eventLoop().execute(() -> probe(c));
            }
        }
    }

    /**
     * Sends an HTTP/2 PING on a connection whose streams have had nothing sent for a while (blocked on the remote's
     * flow control): then something is in flight, which a live remote's kernel acknowledges at once. gRPC's own
     * keepalive cannot do this: it pings no more often than every 10 s. A connection without streams holds nothing
     * and is left alone.
     */
    private static void probe(EpollSocketChannel c) {
        Http2ConnectionHandler h = ReceivingChannel.http2Handler(c.pipeline());
        if (h != null && c.isActive() && h.connection().numActiveStreams() > 0) {
            ChannelHandlerContext ctx = c.pipeline().context(h);
            h.encoder().writePing(ctx, false, PING_PAYLOAD, ctx.newPromise());
            ctx.flush();
        }
    }

    @Override
    public void close() {
        task.cancel(false);
    }
}
