package io.tensorsocket.consumer;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.rings.DescriptorRings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A consumer's connection to its producer: what failed (and is reported at the consumer's next call), the
 * producer's liveness, what the consumer sends, and a watchdog that reads the socket while the consumer
 * trains, so that a producer that died is known at once, not when the consumer next asks for a batch.
 * Stream events arrive through one {@link Inbox}, chosen when the consumer joins: the socket
 * ({@link SocketInbox}) until the producer gives a descriptor ring ({@link #handOffThrough}), the ring
 * ({@link RingInbox}) from then on.
 *
 * <p>Liveness: a live producer sends a HEARTBEAT whenever it has sent nothing for a second; whoever reads
 * it answers with one (so the producer never queues more than a few to a consumer that stopped reading)
 * and notes the time. A waiting iterator that has heard nothing at all for the liveness timeout reports
 * the producer as not responding. Heartbeats come only into silences, so a stream of batches costs no
 * extra wake-up; only a waiting iterator judges liveness, so batches already received are never lost to it.
 *
 * <p>The socket's read side belongs to the holder of {@code reader}. While no iterator waits on the socket,
 * the watchdog holds it and reads whatever arrives into the queue (an ERROR or the end of the connection
 * becomes {@link #check()}'s failure); a waiting iterator that finds the watchdog holding it wakes the
 * watchdog's selector, which then yields; the watchdog takes the socket back once the iterator has not
 * waited for a while (20 ms, {@link LinkWatchdog}). Queued messages are taken first, so order is kept.
 * With a ring, the watchdog keeps the socket for good, answers heartbeats, and rings the ring's doorbell
 * when the socket brings an ERROR or ends. Every ring entry was published before the producer wrote
 * anything after it to the socket, so the socket's end is a failure only once the ring is drained and
 * holds no END.
 */
public final class ConsumerLink implements AutoCloseable {
    private final MessageChannel channel;
    private final String producer;
    private final LinkFailures failures;
    private final ConcurrentLinkedQueue<Message> queue = new ConcurrentLinkedQueue<>();
    private final ReentrantLock reader = new ReentrantLock();
    private final LinkWatchdog watchdog;
    private final SocketInbox socketInbox;
    /** Where stream events are taken from: the socket, or the ring once the producer gave one. */
    private volatile Inbox inbox;
    /** Nothing more can be read: the peer closed the connection, or a failure was seen. */
    private volatile boolean ended;

    private volatile TensorSocketException failure;
    private volatile boolean streamEnded;
    private volatile boolean closing;
    private final long livenessNanos;
    /** When anything last arrived from the producer ({@link System#nanoTime()}). */
    private volatile long lastHeard = System.nanoTime();
    /** How long a waiting iterator polls before it sleeps; 0 = sleep at once. */
    private volatile long spinNanos;
    /** With a ring: the socket ended without an ERROR, which is a failure unless the ring holds the END. */
    private volatile boolean peerClosed;

    private volatile IOException closeCause;

    /**
     * Lets a waiting iterator poll for up to {@code nanos} before it sleeps. A batch that arrives within
     * that time is taken without a thread wake-up (the scheduler's latency on a busy machine is most of a
     * handoff's time), at the cost of a core kept busy while the consumer waits.
     */
    public void spinWait(long nanos) {
        this.spinNanos = Math.max(0, nanos);
    }

    /**
     * @param liveness how long a waiting iterator accepts hearing nothing from the producer
     */
    public ConsumerLink(MessageChannel channel, String producer, Duration liveness) {
        this.channel = channel;
        this.producer = producer;
        this.failures = new LinkFailures(producer);
        this.livenessNanos = liveness.toNanos();
        try {
            channel.channel().configureBlocking(false);
            socketInbox = new SocketInbox(this, channel.channel());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.inbox = socketInbox;
        this.watchdog = new LinkWatchdog(this, channel.channel());
    }

    /**
     * Hands the stream over through ring {@code index} of {@code rings} (which this link now closes) from
     * now on: the producer gave this consumer, {@code owner}, that ring in its WELCOME. The watchdog then
     * keeps the socket.
     */
    public void handOffThrough(DescriptorRings rings, int index, int owner) {
        try {
            this.inbox = new RingInbox(this, rings, rings.reader(index, owner));
        } catch (RuntimeException e) {
            rings.close();
            throw e;
        }
        watchdog.keepTheSocket();
    }

    /** Whether the stream comes through a descriptor ring. */
    public boolean ringHandoff() {
        return inbox instanceof RingInbox;
    }

    /**
     * Reads every whole frame the socket holds into the queue; the caller holds {@code reader}.
     *
     * @return whether anything new happened (a message, a failure, or the end)
     */
    boolean readFrames() {
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
                queue.add(m);
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
        if (ringHandoff()) {
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
        if (f == null && peerClosed && !streamEnded && !inbox.endPending()) {
            fail(failures.lostConnection(closeCause));
            f = failure;
        }
        if (f != null) {
            throw f;
        }
    }

    /**
     * The next message, waiting at most {@code timeoutNanos}, from the socket or the ring.
     *
     * @throws TensorSocketTimeoutException saying what was awaited
     */
    public Message take(long timeoutNanos, String awaited) {
        return inbox.take(timeoutNanos, awaited);
    }

    /** Whether the latest {@link #take} found nothing to read and had to wait for the producer. */
    public boolean waited() {
        return inbox.waited();
    }

    /** The next message if one arrived already, else null. */
    public Message poll() {
        check();
        return inbox.poll();
    }

    /** Whether the producer said the stream is over (its END may wait in the ring, behind batches). */
    public boolean streamEnded() {
        return streamEnded || inbox.endPending();
    }

    // ------------------------------------------------------------------------------------------------ for the inboxes

    /** A message the watchdog (or a reader of the socket) queued, or null. */
    Message queued() {
        return queue.poll();
    }

    /** Whether something other than a ring entry wants the waiting iterator's attention. */
    boolean news() {
        return !queue.isEmpty() || failure != null || ended || closing;
    }

    /** {@link #check()}, and refuses once the consumer is being closed. */
    void checkOpen() {
        check();
        if (closing) {
            throw new IllegalStateException("this consumer of producer '" + producer + "' is closed");
        }
    }

    boolean ended() {
        return ended;
    }

    long spinNanos() {
        return spinNanos;
    }

    ReentrantLock reader() {
        return reader;
    }

    void wakeWatchdog() {
        watchdog.yieldTheSocket();
    }

    /** An iterator starts or stops waiting on the socket; the watchdog takes it back a while after it stopped. */
    void iteratorWaits(boolean waiting) {
        watchdog.iteratorWaits(waiting);
    }

    boolean closing() {
        return closing;
    }

    /** The watchdog could not read the socket: the link's failure, unless it is being closed. */
    void watchFailed(IOException e) {
        if (!closing) {
            fail(failures.lostConnection(e));
        }
    }

    /** The ring's inbox, or null while the stream comes over the socket. */
    RingInbox ring() {
        return inbox instanceof RingInbox r ? r : null;
    }

    /** {@code m} arrived other than over the socket. */
    void heard(Message m) {
        lastHeard = System.nanoTime();
        if (m instanceof Message.EndOfStream) {
            streamEnded = true;
        }
    }

    /** The failure to throw when reading the socket failed with {@code e}. */
    RuntimeException readFailed(IOException e) {
        check();
        return closing
                ? new IllegalStateException("this consumer of producer '" + producer + "' is closed")
                : failures.lostConnection(e);
    }

    /** The producer gave this consumer's ring to another: the failure to throw, with the producer's reason if it sent one. */
    TensorSocketException detached(String what) {
        readWhatIsLeft(); // the producer's ERROR (an eviction, most likely) says why
        check();
        fail(failures.detached(what));
        return failure;
    }

    /** The producer broke the protocol: {@code e} is every later call's failure too. */
    ProtocolException violated(ProtocolException e) {
        fail(e);
        return e;
    }

    /**
     * How much longer a waiting iterator may hear nothing from the producer at {@code now}; the producer is
     * reported as not responding once it has been silent for the liveness timeout.
     */
    long stillLive(long now, String awaited) {
        long silence = now - lastHeard;
        if (silence >= livenessNanos) {
            fail(failures.notResponding(silence, awaited));
            check();
        }
        return livenessNanos - silence;
    }

    static void checkInterrupt(String awaited) {
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw new TensorSocketException("interrupted while waiting for " + awaited);
        }
    }

    TensorSocketException timeout(long timeoutNanos, String awaited) {
        check();
        return failures.timeout(timeoutNanos, awaited);
    }

    // ------------------------------------------------------------------------------------------------ sending

    /** Sends {@code frames} in one write. */
    public void send(List<Message> frames) {
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
        if (ringHandoff()) {
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
        watchdog.join(millis);
    }

    /**
     * Ends a wait in {@link #take} on another thread at once, with an {@link IllegalStateException}: the
     * consumer is being closed. Nothing is sent or released; {@link #close} follows.
     */
    public void abortWait() {
        closing = true;
        watchdog.yieldTheSocket();
        inbox.abortWait();
    }

    @Override
    public void close() {
        abortWait(); // an iterator waiting in another thread, on the socket or on the ring, sees the close
        channel.sendQuietly(new Message.Bye());
        channel.close();
        watchdog.close();
        socketInbox.close();
        if (inbox != socketInbox) {
            inbox.close();
        }
    }
}
