package io.tensorsocket.consumer;

import io.tensorsocket.TensorSocketException;
import io.tensorsocket.protocol.Message;
import java.io.IOException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * Stream events that come over the consumer's socket. A waiting iterator takes the socket over from the
 * link's watchdog: it waits for readiness itself and decodes the frame it waited for, so a batch wakes
 * exactly the thread that consumes it (see {@link ConsumerLink} for how the two share the socket).
 */
final class SocketInbox implements Inbox {
    private final ConsumerLink link;
    private final Selector selector;
    private boolean waited;

    SocketInbox(ConsumerLink link, SocketChannel channel) throws IOException {
        this.link = link;
        this.selector = Selector.open();
        channel.register(selector, SelectionKey.OP_READ);
    }

    @Override
    public Message take(long timeoutNanos, String awaited) {
        long deadline = System.nanoTime() + timeoutNanos;
        waited = false;
        link.check();
        Message m = link.queued();
        if (m != null) {
            return m;
        }
        link.iteratorWaits(true);
        try {
            if (!link.reader().tryLock()) {
                link.wakeWatchdog();
                if (!link.reader().tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    throw link.timeout(timeoutNanos, awaited);
                }
            }
            try {
                while (true) {
                    m = link.queued();
                    if (m != null) {
                        return m;
                    }
                    link.checkOpen();
                    if (link.readFrames()) {
                        continue;
                    }
                    waited = true;
                    if (spinUntilReadable(deadline)) {
                        continue;
                    }
                    long now = System.nanoTime();
                    long left = deadline - now;
                    if (left <= 0 || link.ended()) {
                        throw link.timeout(timeoutNanos, awaited);
                    }
                    left = Math.min(left, link.stillLive(now, awaited));
                    selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left) + 1));
                    selector.selectedKeys().clear();
                    ConsumerLink.checkInterrupt(awaited);
                }
            } finally {
                link.reader().unlock();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TensorSocketException("interrupted while waiting for " + awaited, e);
        } catch (IOException | ClosedSelectorException e) {
            throw link.readFailed(e instanceof IOException io ? io : null);
        } finally {
            link.iteratorWaits(false); // the watchdog takes the socket back after a while
        }
    }

    /** Polls the socket for up to the link's spin time (never past {@code deadline}); true once frames arrived. */
    private boolean spinUntilReadable(long deadline) {
        long spin = link.spinNanos();
        if (spin == 0) {
            return false;
        }
        long until = Math.min(deadline, System.nanoTime() + spin);
        while (!link.ended() && System.nanoTime() < until) {
            if (link.readFrames()) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }

    @Override
    public Message poll() {
        return link.queued();
    }

    @Override
    public boolean waited() {
        return waited;
    }

    @Override
    public boolean endPending() {
        return false; // an END read from the socket is the link's streamEnded already
    }

    @Override
    public void abortWait() {
        selector.wakeup();
    }

    @Override
    public void close() {
        try {
            selector.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
    }
}
