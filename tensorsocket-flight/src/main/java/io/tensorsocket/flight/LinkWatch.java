package io.tensorsocket.flight;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.epoll.EpollTcpInfo;
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
 * whose window stays closed), so this reads each connection's {@code TCP_INFO} every quarter second: data
 * in flight ({@code tcpi_unacked > 0}) and no acknowledgement for longer than the timeout
 * ({@code tcpi_last_ack_recv}). A stream blocked on the remote's flow control sends nothing to acknowledge;
 * the server's HTTP/2 keepalive PING (after half a second without word from the remote) is what is then in
 * flight.
 */
final class LinkWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LinkWatch.class);
    private static final long CHECK_EVERY_MS = 250;

    private final Set<EpollSocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final long timeoutMs;
    private final ScheduledFuture<?> task;
    private final EpollTcpInfo info = new EpollTcpInfo();

    LinkWatch(Duration timeout, ScheduledExecutorService timer) {
        this.timeoutMs = timeout.toMillis();
        this.task = timer.scheduleWithFixedDelay(this::check, CHECK_EVERY_MS, CHECK_EVERY_MS, TimeUnit.MILLISECONDS);
    }

    /** The server channel to listen with: each connection it accepts is watched until it closes. */
    ServerChannel newServerChannel() {
        EpollServerSocketChannel server = new EpollServerSocketChannel();
        // accepted connections pass through the listening channel's pipeline before the bootstrap sets them up
        server.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object accepted) {
                if (accepted instanceof EpollSocketChannel c) {
                    connections.add(c);
                    c.closeFuture().addListener(f -> connections.remove(c));
                }
                ctx.fireChannelRead(accepted);
            }
        });
        return server;
    }

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
            if (info.unacked() > 0 && info.lastAckRecv() > timeoutMs) {
                LOG.info("dropping the connection of remote {}: nothing sent to it was acknowledged for {} ms (its link"
                        + " is cut or its host is gone); its streams end and release what they held", c.remoteAddress(),
                        info.lastAckRecv());
                connections.remove(c);
                // at once, past gRPC's handler: its close would shut down gracefully, waiting for the very
                // streams that wait on the dead link
                c.eventLoop().execute(() -> c.unsafe().close(c.unsafe().voidPromise()));
            }
        }
    }

    @Override
    public void close() {
        task.cancel(false);
    }
}
