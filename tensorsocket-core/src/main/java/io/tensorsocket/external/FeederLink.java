package io.tensorsocket.external;

import io.tensorsocket.BatchSink;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.SourceStoppedException;
import io.tensorsocket.producer.ProducerIdleEnd;
import io.tensorsocket.producer.ProducerStopped;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The connection to one feeder: what it sent, in order, and what its end means. A feeder that stops or fails says
 * why (an ERROR) and closes; one whose connection ends without a word disconnected (its process died). Either way
 * a producer waiting in a claim for it (for a free slot, or for its first consumers) learns at once.
 *
 * <p>A reader thread puts every frame, and at last the connection's {@link FeederEpoch.Ended end}, into an inbox
 * that {@link ExternalSource} takes from; the messages this link builds name the feeder as {@link #named} says.
 */
final class FeederLink implements FeederEpoch.Link {
    /** How long a failed send waits for the reason the feeder sent before it closed. */
    private static final long REASON_WAIT_NANOS = 500_000_000L;

    private final MessageChannel channel;
    private final boolean wakesClaims;
    private final BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    private volatile String who = "the feeder";
    private volatile BatchSink sink;
    /** The thread emitting epochs while it claims a slot, for the reader to wake when the feeder goes away. */
    private volatile Thread emitter;

    private volatile boolean claiming;
    private volatile boolean gone;

    /** Starts reading {@code channel}, a feeder's connection to the producer called {@code producer}. */
    FeederLink(MessageChannel channel, String producer) {
        this(channel, producer, true);
    }

    /**
     * @param wakesClaims whether the connection's end wakes a claim waiting on it: the main connection's (whose claim
     *                    may wait for consumers without bound); a lane's claim waits at most the stall timeout
     */
    FeederLink(MessageChannel channel, String producer, boolean wakesClaims) {
        this.channel = channel;
        this.wakesClaims = wakesClaims;
        Thread.ofPlatform()
                .daemon()
                .name("tensorsocket-feeder-read-" + producer)
                .start(this::readLoop);
    }

    /** Whether the feeder's connection ended. */
    boolean gone() {
        return gone;
    }

    /** How messages name this feeder from now on. */
    void named(String who) {
        this.who = who;
    }

    /** How messages name this feeder: "the feeder" until it declared itself. */
    String who() {
        return who;
    }

    /** Where {@link #claim} claims slots: the producer's. */
    void feedInto(BatchSink sink) {
        this.sink = sink;
    }

    /** The next frame or the connection's end, waiting at most {@code timeout}; null if none came. */
    Object next(Duration timeout) throws InterruptedException {
        return inbox.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void readLoop() {
        try {
            while (true) {
                Message m = channel.read();
                if (m == null) {
                    inbox.add(new FeederEpoch.Ended(null));
                    break;
                }
                inbox.add(m);
            }
        } catch (IOException | RuntimeException e) {
            inbox.add(new FeederEpoch.Ended(e));
        }
        // A producer that waits for a slot or for its first consumers learns now that its feeder is gone.
        gone = true;
        Thread t = emitter;
        if (wakesClaims && claiming && t != null) {
            t.interrupt();
        }
    }

    /**
     * Claims a slot for the feeder, which may take long (the producer waits for its first consumers, or for one
     * that holds the slot): a feeder that goes away meanwhile ends the wait (see {@link #readLoop}).
     */
    @Override
    public SlotWriter claim(String at) {
        emitter = Thread.currentThread();
        claiming = true;
        try {
            if (gone) {
                throw lost(at, " while the producer waited for a free slot or its consumers");
            }
            return sink.claim();
        } catch (ProducerStopped stopped) {
            if (!gone) {
                if (stopped instanceof ProducerIdleEnd) {
                    // the feeder's normal end too: it is told so, and why
                    sendQuietly(new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, stopped.getMessage()));
                }
                throw stopped; // the producer is being closed
            }
            throw lost(at, " while the producer waited for a free slot or its consumers");
        } finally {
            claiming = false;
        }
    }

    @Override
    public void send(Message m, String at) {
        try {
            channel.send(m);
        } catch (IOException e) {
            throw lost(at, " (" + e.getMessage() + ")");
        }
    }

    /** Epoch {@code epoch}'s order, in frames of at most {@link Message.EpochOrder#MAX_IDS} ids. */
    @Override
    public void sendOrder(long epoch, int[] order) {
        for (int first = 0; first < order.length; first += Message.EpochOrder.MAX_IDS) {
            int[] ids = Arrays.copyOfRange(order, first, Math.min(order.length, first + Message.EpochOrder.MAX_IDS));
            send(new Message.EpochOrder(epoch, first, order.length, ids), " before epoch " + epoch);
        }
    }

    /** Tells the feeder why the stream ends and returns the failure the producer reports to its consumers. */
    @Override
    public FeederFailedException fail(String message) {
        sendQuietly(new Message.Error(Message.ErrorCode.LOADER_FAILED, message));
        return new FeederFailedException(message);
    }

    /** The feeder's own ERROR: it stops (the stream ends or the producer stops, see ExternalSource) or it failed. */
    @Override
    public RuntimeException ended(Message.Error e, String at) {
        return switch (e.code()) {
            case PRODUCER_CLOSED -> new SourceStoppedException(who + " stopped" + at + ": " + e.message(), false);
            case STOPPED -> new SourceStoppedException(who + " stopped" + at + ": " + e.message(), true);
            default -> fail(who + " failed" + at + ": " + e.message());
        };
    }

    /**
     * What a feeder whose connection ended meant by it: a feeder that stops or fails says why, then closes, and its
     * reason may still be on the way in; one that says nothing disconnected (its process died).
     */
    private RuntimeException lost(String at, String detail) {
        Thread.interrupted(); // the reader may have woken this thread out of a claim: waits below are its own
        Message.Error reason = reasonOnTheWay();
        if (reason != null) {
            return ended(reason, at);
        }
        return fail(who + " disconnected" + at + detail + "; did its process die?");
    }

    /** The ERROR among what the feeder sent before its connection ended, if it sent one. */
    private Message.Error reasonOnTheWay() {
        long deadline = System.nanoTime() + REASON_WAIT_NANOS;
        try {
            for (Object o;
                    (o = inbox.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) != null; ) {
                if (o instanceof Message.Error e) {
                    return e;
                }
                if (o instanceof FeederEpoch.Ended) {
                    return null;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return null;
    }

    void sendQuietly(Message m) {
        channel.sendQuietly(m);
    }

    void close() {
        channel.close();
    }
}
