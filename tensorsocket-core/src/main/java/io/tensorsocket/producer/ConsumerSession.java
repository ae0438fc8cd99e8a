package io.tensorsocket.producer;

import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;

import java.io.IOException;
import java.util.ArrayDeque;

/**
 * The producer's view of one attached consumer: its connection, what it asked for and which batches it
 * still holds. Mutated only under the producer's lock.
 */
final class ConsumerSession {
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
    int unansweredHeartbeats;
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

    ConsumerSession(int id, MessageChannel channel, Message.Hello hello) {
        this.id = id;
        this.channel = channel;
        this.hello = hello;
    }

    /** Sends, reporting failure instead of throwing: a broken connection is dealt with by its reader. */
    boolean send(Message m) {
        try {
            channel.send(m);
            lastSentNanos = System.nanoTime();
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    String describe() {
        return "consumer " + id + " (pid " + hello.pid() + ", batch size " + hello.batchSize() + ")";
    }
}
