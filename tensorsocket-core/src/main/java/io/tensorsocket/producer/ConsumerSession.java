package io.tensorsocket.producer;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.arena.DescriptorRings;
import io.tensorsocket.arena.Futex;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.protocol.WireFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import io.tensorsocket.stream.StreamGeometry;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The producer's view of one attached consumer: its connection, what it asked for and which batches it
 * still holds. Mutated only under the producer's lock, but for the count of unanswered heartbeats.
 */
final class ConsumerSession {
    private static final Logger log = LoggerFactory.getLogger(ConsumerSession.class);
    final int id;
    final MessageChannel channel;
    final Message.Hello hello;
    /** Sequence numbers sent and not yet released, oldest first (releases arrive in order). */
    final ArrayDeque<Long> held = new ArrayDeque<>();
    final long joinedNanos = System.nanoTime();
    long batchesSent;
    /**
     * Heartbeats sent to a consumer that has not answered them: a consumer that stops reading (stopped, or
     * stuck) gets no more than this many, so they can never fill its socket and block the producer.
     */
    static final int MAX_UNANSWERED_HEARTBEATS = 4;
    private final AtomicInteger unansweredHeartbeats = new AtomicInteger(); // counted down by the reader, lock-free

    /** Whether it may be sent one more HEARTBEAT, counting it as sent if so. Under the producer's lock. */
    boolean heartbeatSendable() {
        if (unansweredHeartbeats.get() >= MAX_UNANSWERED_HEARTBEATS) {
            return false;
        }
        unansweredHeartbeats.incrementAndGet();
        return true;
    }

    void heartbeatAnswered() {
        unansweredHeartbeats.updateAndGet(n -> Math.max(0, n - 1));
    }
    /** When anything was last sent to it ({@link System#nanoTime()}): heartbeats fill only silences. */
    volatile long lastSentNanos = System.nanoTime();
    /** Where it started; it is sent batches from there on (later than the producer for one that waits for the next epoch). */
    io.tensorsocket.stream.StartPoint start;
    boolean attached = true;
    /** The peer's user name (SO_PEERCRED), or "?" where the platform does not say. */
    String user = "?";
    StartMode startMode = StartMode.EPOCH_START;
    /** Stream position up to which this consumer has released every sample. */
    long position;
    /** Its last two progress reports, for status (null before the first). */
    io.tensorsocket.protocol.Message.Progress progress;
    long progressNanos;
    io.tensorsocket.protocol.Message.Progress previousProgress;
    long previousProgressNanos;

    /** Its descriptor ring and that ring's number, or null and {@link Message.Welcome#NO_RING}: its stream goes over the socket. */
    DescriptorRings.Writer ring;
    int ringIndex = Message.Welcome.NO_RING;
    private Futex ringFutex;

    ConsumerSession(int id, MessageChannel channel, Message.Hello hello) {
        this.id = id;
        this.channel = channel;
        this.hello = hello;
    }

    /** Hands its stream events through ring {@code index}, woken with {@code futex}; or, with null, over its socket. */
    void handOffThrough(DescriptorRings.Writer ring, int index, Futex futex) {
        this.ring = ring;
        this.ringIndex = index;
        this.ringFutex = futex;
    }

    /**
     * Sends a stream event (a batch, an epoch's end, the end), through the consumer's ring when it has one,
     * reporting failure instead of throwing: a broken connection is dealt with by its reader.
     */
    boolean sendEvent(Message m) {
        if (ring != null) {
            WireFormat.encode(m, ring.frame());
            if (!ring.publish(ringFutex)) {
                log.warn("{} has not read any of the {} entries of its full descriptor ring; dropping it", describe(),
                        ring.capacity());
                return false;
            }
            lastSentNanos = System.nanoTime();
            return true;
        }
        return send(m);
    }

    /** Sends over the socket, reporting failure instead of throwing: a broken connection is dealt with by its reader. */
    boolean send(Message m) {
        try {
            channel.send(m);
            lastSentNanos = System.nanoTime();
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Records a report the consumer sent about itself. */
    void progress(Message.Progress p) {
        if (progress != null) {
            previousProgress = progress;
            previousProgressNanos = progressNanos;
        }
        progress = p;
        progressNanos = System.nanoTime();
    }

    /** This consumer's line in the producer's status at {@code now}, the producer being at {@code producerPosition}. */
    ProducerStatus.Consumer status(long now, long producerPosition, StreamGeometry geometry) {
        Message.Progress p = progress;
        long epoch = p != null ? p.epoch() : geometry.epochOf(position);
        double rate = 0;
        if (p != null) { // samples per second between its last two reports (or since it joined)
            long fromNanos = previousProgress != null ? previousProgressNanos : joinedNanos;
            long fromSamples = previousProgress != null ? previousProgress.samples() : 0;
            long toNanos = now - progressNanos > 2_000_000_000L ? now : progressNanos;
            rate = toNanos > fromNanos ? (p.samples() - fromSamples) / ((toNanos - fromNanos) / 1e9) : 0;
        }
        return new ProducerStatus.Consumer(id, Math.max(0, hello.pid()), user, hello.batchSize(), hello.dropLast(), startMode,
                epoch, position, Math.max(0, producerPosition - position), held.size(), batchesSent, p != null,
                p != null ? p.samples() : 0, Math.max(0, rate), p != null ? p.waitNanos() : 0,
                p != null ? p.workNanos() : 0, now - joinedNanos, hello.client(), ring != null);
    }

    String describe() {
        return "consumer " + id + " (pid " + hello.pid() + ", batch size " + hello.batchSize() + ")";
    }
}
