package io.tensorsocket.consumer;

import io.tensorsocket.rings.Futex;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.locks.LockSupport;

/**
 * The thread that reads a consumer's socket while its iterator does not: so an ERROR or the connection's
 * end is the link's failure at once, while the consumer trains, and heartbeats are answered. It yields the
 * socket to a waiting iterator at once (its selector is woken) and takes it back once the iterator has not
 * waited for {@link #PARK_NANOS}; with a descriptor ring it keeps the socket for good and rings the ring's
 * doorbell when the socket brings news, so that an iterator asleep on the ring hears of it.
 */
final class LinkWatchdog implements AutoCloseable {
    /**
     * How long the watchdog leaves the socket to an iterator that stopped waiting: a consumer in a tight
     * loop is back within it, and then takes the socket without waking anyone; a consumer that trains
     * longer learns of a dead producer at most this much later than at once.
     */
    private static final long PARK_NANOS = 20_000_000L;

    private final ConsumerLink link;
    private final Selector selector;
    private final Thread thread;
    private volatile boolean iteratorWaiting;
    /** When an iterator last stopped waiting ({@link System#nanoTime()}). */
    private volatile long iteratorLeft = System.nanoTime() - PARK_NANOS;
    /** Made when the watchdog first rings a doorbell. Its thread only. */
    private Futex futex;

    LinkWatchdog(ConsumerLink link, SocketChannel channel) {
        this.link = link;
        try {
            this.selector = Selector.open();
            channel.register(selector, SelectionKey.OP_READ);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.thread = Thread.ofPlatform()
                .daemon()
                .name("tensorsocket-consumer-watchdog")
                .start(this::watch);
    }

    /** Reads the socket whenever no iterator waits on it, until the connection ends. */
    private void watch() {
        try {
            while (!link.closing() && !link.ended()) {
                boolean ringMode = link.ring() != null;
                long sinceIterator = System.nanoTime() - iteratorLeft;
                if ((!ringMode && (iteratorWaiting || sinceIterator < PARK_NANOS))
                        || !link.reader().tryLock()) {
                    LockSupport.parkNanos(this, Math.max(1_000_000L, PARK_NANOS - sinceIterator));
                    continue;
                }
                try {
                    if (!ringMode && iteratorWaiting) {
                        continue;
                    }
                    selector.select();
                    selector.selectedKeys().clear();
                    if (!link.closing() && link.readFrames()) {
                        knock();
                    }
                } catch (IOException | ClosedSelectorException e) {
                    link.watchFailed(e instanceof IOException io ? io : null);
                    return;
                } finally {
                    link.reader().unlock();
                }
            }
        } finally {
            knock(); // an iterator asleep on the ring learns that nothing more comes from the socket
        }
    }

    /** Wakes an iterator asleep on the ring, if there is a ring. */
    private void knock() {
        RingInbox r = link.ring();
        if (r != null) {
            if (futex == null) {
                futex = new Futex();
            }
            try {
                r.reader().knock(futex);
            } catch (IllegalStateException e) {
                // the link was closed and the ring unmapped: no one is left to wake
            }
        }
    }

    /** An iterator starts or stops waiting on the socket. */
    void iteratorWaits(boolean waiting) {
        if (!waiting) {
            iteratorLeft = System.nanoTime();
        }
        iteratorWaiting = waiting;
    }

    /** Wakes the watchdog from the socket's selector, so that it lets go of the socket. */
    void yieldTheSocket() {
        selector.wakeup();
    }

    /** The stream now comes through a ring: the watchdog keeps the socket from now on. */
    void keepTheSocket() {
        LockSupport.unpark(thread);
    }

    /** Waits up to {@code millis} for the watchdog to end (it reads what the socket still held first). */
    void join(long millis) {
        try {
            thread.join(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        LockSupport.unpark(thread);
        join(1000);
        try {
            selector.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
    }
}
