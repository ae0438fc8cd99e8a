package io.tensorsocket.consumer;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.arena.Futex;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A consumer's connection to its producer, read by whichever thread needs it: one hop from the socket to
 * a consumer that waits for a batch, and at once news of a producer that died while the consumer trains.
 *
 * <ul>
 *   <li>The iterating thread, when it must wait ({@link #take}), takes the socket over: it waits for
 *       readiness itself and decodes the frame it was waiting for, so a batch wakes exactly the thread
 *       that consumes it.</li>
 *   <li>While no one waits (the consumer trains), a watchdog thread waits for readiness instead and reads
 *       whatever arrives into the inbox: an ERROR or the end of the connection becomes {@link #check()}'s
 *       failure at once, not when the consumer next asks for a batch.</li>
 * </ul>
 *
 * <p>Liveness: a live producer sends a HEARTBEAT whenever it has sent nothing for a second; whoever reads
 * it answers with one (so the producer never queues more than a few to a consumer that stopped reading)
 * and notes the time. A waiting iterator that has heard nothing at all for the liveness timeout reports
 * the producer as not responding. Heartbeats come only into silences, so a stream of batches costs no
 * extra wake-up; only a waiting iterator judges liveness, so batches already received are never lost to it.
 *
 * <p>Only the holder of {@code reader} touches the socket's read side. A waiting iterator that finds the
 * watchdog holding it wakes the watchdog's selector, which then yields; the watchdog takes the socket back
 * once the iterator has not waited for a while ({@link #WATCHDOG_PARK_NANOS}). Messages read by the
 * watchdog are taken from the inbox first, so order is kept.
 *
 * <p>Once the producer gives the consumer a descriptor ring ({@link #handOffThrough}), the stream comes
 * through shared memory instead: a waiting iterator polls the ring, then sleeps on its doorbell (a futex
 * the producer rings only when the iterator sleeps), and never touches the socket; the watchdog keeps the
 * socket for good, answers heartbeats, and rings the doorbell itself when the socket brings an ERROR or
 * ends. Every entry was published before the producer wrote anything after it to the socket, so the
 * socket's end is a failure only once the ring is drained and holds no END.
 */
public final class ConsumerLink implements AutoCloseable {
    /**
     * How long the watchdog leaves the socket to an iterator that stopped waiting: a consumer in a tight
     * loop is back within it, and then takes the socket without waking anyone; a consumer that trains
     * longer learns of a dead producer at most this much later than at once.
     */
    private static final long WATCHDOG_PARK_NANOS = 20_000_000L;
    /**
     * The longest an iterator sleeps on its ring's doorbell before it looks again: a lost wake-up (there
     * should be none) costs this much, never a hang, and an interrupt is seen within it.
     */
    private static final long RING_PARK_NANOS = 100_000_000L;

    private final MessageChannel channel;
    private final String producer;
    private final LinkFailures failures;
    private final ConcurrentLinkedQueue<Message> inbox = new ConcurrentLinkedQueue<>();
    private final ReentrantLock reader = new ReentrantLock();
    private final Selector iteratorSelector;
    private final Selector watchdogSelector;
    private final Thread watchdog;
    private volatile boolean iteratorWaiting;
    /** When an iterator last stopped waiting ({@link System#nanoTime()}). */
    private volatile long iteratorLeft = System.nanoTime() - WATCHDOG_PARK_NANOS;
    /** Nothing more can be read: the peer closed the connection, or a failure was seen. */
    private volatile boolean ended;
    private volatile TensorSocketException failure;
    private volatile boolean streamEnded;
    private volatile boolean closing;
    private final long livenessNanos;
    /** When anything last arrived from the producer ({@link System#nanoTime()}). */
    private volatile long lastHeard = System.nanoTime();
    /** How long a waiting iterator polls the socket before it blocks in its selector; 0 = block at once. */
    private volatile long spinNanos;
    /** See {@link #waited()}; read and written by the iterating thread only. */
    private boolean waited;
    /** The descriptor ring, once the producer gave one; null while every message comes over the socket. */
    private volatile RingInbox ring;
    /** The watchdog's futex, made by it when it first rings the doorbell. */
    private Futex watchdogFutex;
    /** With a ring: the socket ended without an ERROR, which is a failure unless the ring holds the END. */
    private volatile boolean peerClosed;
    private volatile IOException closeCause;

    /**
     * Lets a waiting iterator poll the socket for up to {@code nanos} before it sleeps in the selector.
     * A batch that arrives within that time is taken without a thread wake-up (the scheduler's latency on a
     * busy machine is most of a handoff's time), at the cost of a core kept busy while the consumer waits.
     */
    public void spinWait(long nanos) {
        this.spinNanos = Math.max(0, nanos);
    }

    /**
     * @param liveness how long a waiting iterator accepts hearing nothing from the producer
     */
    public ConsumerLink(MessageChannel channel, String producer, java.time.Duration liveness) {
        this.channel = channel;
        this.producer = producer;
        this.failures = new LinkFailures(producer);
        this.livenessNanos = liveness.toNanos();
        try {
            channel.channel().configureBlocking(false);
            iteratorSelector = Selector.open();
            watchdogSelector = Selector.open();
            channel.channel().register(iteratorSelector, SelectionKey.OP_READ);
            channel.channel().register(watchdogSelector, SelectionKey.OP_READ);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.watchdog = Thread.ofPlatform().daemon().name("tensorsocket-consumer-watchdog").start(this::watch);
    }

    /**
     * Hands the stream over through ring {@code index} of {@code rings} (which this link now closes) from
     * now on: the producer gave this consumer, {@code owner}, that ring in its WELCOME. The watchdog then
     * keeps the socket.
     */
    public void handOffThrough(io.tensorsocket.arena.DescriptorRings rings, int index, int owner) {
        try {
            this.ring = new RingInbox(rings, rings.reader(index, owner));
        } catch (RuntimeException e) {
            rings.close();
            throw e;
        }
        LockSupport.unpark(watchdog);
    }

    /** Whether the stream comes through a descriptor ring. */
    public boolean ringHandoff() {
        return ring != null;
    }

    /** The watchdog: reads the socket whenever no iterator waits on it, until the connection ends. */
    private void watch() {
        try {
            while (!closing && !ended) {
                boolean ringMode = ring != null;
                long sinceIterator = System.nanoTime() - iteratorLeft;
                if (!ringMode && (iteratorWaiting || sinceIterator < WATCHDOG_PARK_NANOS) || !reader.tryLock()) {
                    LockSupport.parkNanos(this, Math.max(1_000_000L, WATCHDOG_PARK_NANOS - sinceIterator));
                    continue;
                }
                try {
                    if (!ringMode && iteratorWaiting) {
                        continue;
                    }
                    watchdogSelector.select();
                    watchdogSelector.selectedKeys().clear();
                    if (!closing && readFrames()) {
                        knock();
                    }
                } catch (IOException | ClosedSelectorException e) {
                    if (!closing) {
                        fail(failures.lostConnection(e instanceof IOException io ? io : null));
                    }
                    return;
                } finally {
                    reader.unlock();
                }
            }
        } finally {
            knock(); // an iterator asleep on the ring learns that nothing more comes from the socket
        }
    }

    /** Wakes an iterator asleep on the ring, if there is a ring. Watchdog thread only. */
    private void knock() {
        RingInbox r = ring;
        if (r != null) {
            if (watchdogFutex == null) {
                watchdogFutex = new Futex();
            }
            try {
                r.reader().knock(watchdogFutex);
            } catch (IllegalStateException e) {
                // the link was closed and the ring unmapped: no one is left to wake
            }
        }
    }

    /** Polls the socket for up to {@link #spinNanos} (never past {@code deadline}); true once frames arrived. */
    private boolean spinUntilReadable(long deadline) {
        long spin = spinNanos;
        if (spin == 0) {
            return false;
        }
        long until = Math.min(deadline, System.nanoTime() + spin);
        while (!ended && System.nanoTime() < until) {
            if (readFrames()) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }

    /**
     * Reads every whole frame the socket holds into the inbox; the caller holds {@code reader}.
     *
     * @return whether anything new happened (a message, a failure, or the end)
     */
    private boolean readFrames() {
        if (ended) {
            return false;
        }
        boolean any = false;
        try {
            while (!ended) {
                Message m = channel.readAvailable();
                if (m == null) {
                    if (channel.peerClosed()) {
                        if (!streamEnded) {
                            closed(null);
                        }
                        ended = true; // after the failure: whoever sees the end sees why
                        return true;
                    }
                    return any;
                }
                any = true;
                lastHeard = System.nanoTime();
                if (m instanceof Message.Heartbeat) {
                    channel.sendQuietly(m); // the answer; a lost one only pauses heartbeats
                    continue;
                }
                if (m instanceof Message.Error e) {
                    fail(failures.fromError(e));
                    ended = true;
                    return true;
                }
                if (m instanceof Message.EndOfStream) {
                    streamEnded = true;
                }
                inbox.add(m);
            }
        } catch (ProtocolException | ProtocolVersionException e) {
            fail(e);
            ended = true;
        } catch (IOException e) {
            if (!streamEnded) {
                closed(e);
            }
            ended = true;
        }
        return true;
    }

    /** The socket ended before END came over it: a failure at once, or with a ring once the ring says so (see {@link #check}). */
    private void closed(IOException cause) {
        if (ring != null) {
            closeCause = cause;
            peerClosed = true;
        } else {
            fail(failures.lostConnection(cause));
        }
    }

    private void fail(TensorSocketException e) {
        if (failure == null && !closing) {
            failure = e;
        }
    }

    public void producerPid(long pid) {
        failures.producerPid(pid);
    }

    /** Throws the failure the receiver saw, if any. Called by the iterating thread. */
    public void check() {
        TensorSocketException f = failure;
        if (f == null && peerClosed && !streamEnded) {
            RingInbox r = ring;
            if (r == null || !r.endPending()) {
                fail(failures.lostConnection(closeCause));
                f = failure;
            }
        }
        if (f != null) {
            throw f;
        }
    }

    /**
     * The next message, waiting at most {@code timeoutNanos}; the calling thread reads the socket itself
     * while it waits.
     *
     * @throws TensorSocketTimeoutException saying what was awaited
     */
    public Message take(long timeoutNanos, String awaited) {
        RingInbox r = ring;
        if (r != null) {
            return takeFromRing(r, timeoutNanos, awaited);
        }
        long deadline = System.nanoTime() + timeoutNanos;
        waited = false;
        check();
        Message m = inbox.poll();
        if (m != null) {
            return m;
        }
        iteratorWaiting = true;
        try {
            if (!reader.tryLock()) {
                watchdogSelector.wakeup();
                if (!reader.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    throw timeout(timeoutNanos, awaited);
                }
            }
            try {
                while (true) {
                    m = inbox.poll();
                    if (m != null) {
                        return m;
                    }
                    check();
                    if (closing) {
                        throw closedError();
                    }
                    if (readFrames()) {
                        continue;
                    }
                    waited = true;
                    if (spinUntilReadable(deadline)) {
                        continue;
                    }
                    long now = System.nanoTime();
                    long left = deadline - now;
                    if (left <= 0 || ended) {
                        throw timeout(timeoutNanos, awaited);
                    }
                    left = Math.min(left, stillLive(now, awaited));
                    iteratorSelector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left) + 1));
                    iteratorSelector.selectedKeys().clear();
                    checkInterrupt(awaited);
                }
            } finally {
                reader.unlock();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TensorSocketException("interrupted while waiting for " + awaited, e);
        } catch (IOException | ClosedSelectorException e) {
            check();
            throw closing ? closedError() : failures.lostConnection(e instanceof IOException io ? io : null);
        } finally {
            iteratorLeft = System.nanoTime();
            iteratorWaiting = false; // the watchdog takes the socket back after WATCHDOG_PARK_NANOS
        }
    }

    /** {@link #take} with a ring: polls it, spins if asked to, then sleeps on its doorbell. */
    private Message takeFromRing(RingInbox r, long timeoutNanos, String awaited) {
        long deadline = System.nanoTime() + timeoutNanos;
        waited = false;
        boolean spun = spinNanos == 0;
        while (true) {
            check();
            if (closing) {
                throw closedError();
            }
            Message m = nextFromRing(r);
            if (m == null) {
                m = inbox.poll();
            }
            if (m != null) {
                return m;
            }
            if (ended) { // everything the producer published came before its socket's end, and was taken
                throw timeout(timeoutNanos, awaited);
            }
            waited = true;
            if (!spun) {
                spun = true;
                long until = Math.min(deadline, System.nanoTime() + spinNanos);
                while (!r.ready() && inbox.isEmpty() && failure == null && !ended && System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                continue;
            }
            long now = System.nanoTime();
            long left = deadline - now;
            if (left <= 0) {
                throw timeout(timeoutNanos, awaited);
            }
            long live = stillLive(now, awaited);
            int bell = r.doorbell();
            if (r.ready() || !inbox.isEmpty() || failure != null || ended || closing) {
                continue;
            }
            r.park(bell, Math.min(RING_PARK_NANOS, Math.min(left, live)));
            checkInterrupt(awaited);
        }
    }

    /** The ring's next message, or null; a ring given to someone else is the producer having let this consumer go. */
    private Message nextFromRing(RingInbox r) {
        Message m;
        try {
            m = r.poll();
        } catch (io.tensorsocket.arena.DescriptorRings.RingTakenException e) {
            readWhatIsLeft(); // the producer's ERROR (an eviction, most likely) says why
            check();
            fail(failures.detached(e.getMessage()));
            throw failure;
        } catch (ProtocolException e) {
            fail(e);
            throw e;
        }
        if (m != null) {
            lastHeard = System.nanoTime();
            if (m instanceof Message.EndOfStream) {
                streamEnded = true;
            }
        }
        return m;
    }

    /**
     * How much longer a waiting iterator may hear nothing from the producer at {@code now}; the producer is
     * reported as not responding once it has been silent for the liveness timeout.
     */
    private long stillLive(long now, String awaited) {
        long silence = now - lastHeard;
        if (silence >= livenessNanos) {
            fail(failures.notResponding(silence, awaited));
            check();
        }
        return livenessNanos - silence;
    }

    private static void checkInterrupt(String awaited) {
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw new TensorSocketException("interrupted while waiting for " + awaited);
        }
    }

    private IllegalStateException closedError() {
        return new IllegalStateException("this consumer of producer '" + producer + "' is closed");
    }

    private TensorSocketException timeout(long timeoutNanos, String awaited) {
        check();
        return failures.timeout(timeoutNanos, awaited);
    }

    /** Whether the latest {@link #take} found nothing to read and had to wait for the producer. */
    public boolean waited() {
        return waited;
    }

    /** The next message if one arrived already, else null. */
    public Message poll() {
        check();
        RingInbox r = ring;
        Message m = r != null ? nextFromRing(r) : null;
        return m != null ? m : inbox.poll();
    }

    /** Whether the producer said the stream is over (its END may wait in the ring, behind batches). */
    public boolean streamEnded() {
        RingInbox r = ring;
        return streamEnded || r != null && r.endPending();
    }

    /** Sends {@code frames} in one write. */
    public void send(java.util.List<Message> frames) {
        if (streamEnded) {
            channel.sendQuietly(frames); // the producer may already be gone after a finished stream
            return;
        }
        try {
            channel.send(frames);
        } catch (IOException e) {
            readWhatIsLeft(); // an ERROR the producer sent before it closed says more than the broken pipe
            check();
            fail(failures.lostConnection(e));
            check();
        }
    }

    /** Reads what the socket still holds, if no one else is reading it now (with a ring: lets the watchdog read it). */
    private void readWhatIsLeft() {
        if (ring != null) {
            long until = System.nanoTime() + 200_000_000L;
            while (!ended && failure == null && System.nanoTime() < until) {
                LockSupport.parkNanos(1_000_000L);
            }
            return;
        }
        try {
            if (reader.tryLock(100, TimeUnit.MILLISECONDS)) {
                try {
                    readFrames();
                } finally {
                    reader.unlock();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sends a message whose loss does not matter (a progress report): a broken connection is reported elsewhere. */
    public void sendQuietly(Message m) {
        channel.sendQuietly(m);
    }

    /** Gives the watchdog up to {@code millis} to read what the producer sent before it closed the connection. */
    public void awaitReceiverEnd(long millis) {
        readWhatIsLeft();
        try {
            watchdog.join(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Ends a wait in {@link #take} on another thread at once, with an {@link IllegalStateException}: the
     * consumer is being closed. Nothing is sent or released; {@link #close} follows.
     */
    public void abortWait() {
        closing = true;
        iteratorSelector.wakeup();
        watchdogSelector.wakeup();
        RingInbox r = ring;
        if (r != null) {
            try {
                r.reader().knock(new Futex());
            } catch (IllegalStateException unmapped) {
                // A close on another thread unmapped the ring first: nobody waits on it any more.
            }
        }
    }

    @Override
    public void close() {
        abortWait(); // an iterator waiting in another thread, on the socket or on the ring, sees the close
        channel.sendQuietly(new Message.Bye());
        channel.close();
        LockSupport.unpark(watchdog);
        try {
            watchdog.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeQuietly(iteratorSelector);
        closeQuietly(watchdogSelector);
        RingInbox r = ring;
        if (r != null) {
            r.close();
        }
    }

    private static void closeQuietly(Selector s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
    }
}
