package io.tensorsocket.external;

import io.tensorsocket.BatchSink;
import io.tensorsocket.SourceStoppedException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The feeder's lane connections: where a producer fed by a feeder that loads by index has the batches of its lanes
 * loaded, beside the main stream's. The feeder declares how many it opens (FEEDER_HELLO's {@code lanes}) and opens
 * them once welcomed; a lane's epoch takes a free one for its length.
 *
 * <pre>
 *  feeder (a lane connection)                producer (a lane's thread)
 *    FEEDER_LANE pid                    ──►  kept free until a lane has an epoch to load
 *                                       ◄──  LANE_START lane K, arena lane-K
 *                                       ◄──  ORDER epoch, the lane's samples (its order from where it resumes)
 *    CLAIM / PUBLISH / FEEDER_EPOCH_END ──►  as on the main connection, one claim at a time, into lane-K
 *                                       ◄──  SLOT / FEEDER_EPOCH_END
 *                       (the lane ends mid-epoch: its consumer caught up, left, or failed)
 *                                       ◄──  LANE_STOP K
 *    LANE_STOP K (holds nothing of it)  ──►  free again
 * </pre>
 *
 * A connection whose feeder breaks an epoch's rules ({@link FeederEpoch}) or fails its loader fails that lane: its
 * consumer gets the error (LOADER_FAILED), the other consumers read on, and the connection, stopped, serves the next
 * lane. One that does not answer LANE_STOP within the feeder timeout, or ends, is closed and not used again; the
 * feeder's main connection says what became of the feeder.
 */
final class LaneFeeders {
    private static final Logger log = LoggerFactory.getLogger(LaneFeeders.class);

    private final String producer;
    private final Duration helloTimeout;
    private final Duration feederTimeout;
    private final BlockingQueue<FeederLink> free = new LinkedBlockingQueue<>();
    private final Set<FeederLink> open = ConcurrentHashMap.newKeySet();
    private final Set<SocketChannel> arriving = ConcurrentHashMap.newKeySet();
    private Path directory;
    private Message.FeederHello hello;
    private String feederName;
    private int offered;
    private volatile boolean closed;

    LaneFeeders(String producer, Duration helloTimeout, Duration feederTimeout) {
        this.producer = producer;
        this.helloTimeout = helloTimeout;
        this.feederTimeout = feederTimeout;
    }

    /** The feeder attached with {@code h}, named {@code who}; its lane arenas lie in {@code directory}. */
    synchronized void attached(Message.FeederHello h, String who, Path directory) {
        this.hello = h;
        this.feederName = who;
        this.directory = directory;
    }

    /**
     * A connection that came after the feeder attached: one of its lane connections is kept, anything else refused
     * with why. Reads its first frame on a thread of its own, for at most the hello timeout.
     */
    void offer(SocketChannel ch) {
        arriving.add(ch);
        AtomicBoolean decided = new AtomicBoolean();
        Thread.ofVirtual().name("tensorsocket-feeder-lane-hello-" + producer).start(() -> {
            try {
                Thread.sleep(helloTimeout);
            } catch (InterruptedException ignored) {
                return;
            }
            if (decided.compareAndSet(false, true)) {
                closeQuietly(ch); // silent: neither a lane connection nor a feeder
            }
        });
        Thread.ofVirtual().name("tensorsocket-feeder-arrival-" + producer).start(() -> {
            MessageChannel mc = new MessageChannel(ch);
            Message first;
            try {
                first = mc.read();
            } catch (IOException | RuntimeException e) {
                first = null;
            }
            if (!decided.compareAndSet(false, true)) {
                arriving.remove(ch);
                return;
            }
            arriving.remove(ch);
            String refusal = admit(first, mc);
            if (refusal != null) {
                mc.sendQuietly(new Message.Error(Message.ErrorCode.BAD_REQUEST, refusal));
                MessageChannel.closeAfterPeerRead(ch);
            }
        });
    }

    /** Keeps {@code mc} as a lane connection if its first frame makes it one; else why it is refused. */
    private synchronized String admit(Message first, MessageChannel mc) {
        if (first instanceof Message.FeederLaneHello l) {
            if (closed) {
                return "producer '" + producer + "' is closing";
            }
            if (l.pid() != hello.pid()) {
                return "a lane connection of pid " + l.pid() + ", but producer '" + producer + "' is fed by "
                        + feederName + "; only its feeder opens lane connections";
            }
            if (offered >= hello.lanes()) {
                return feederName + " opened more lane connections than the " + hello.lanes() + " it declared";
            }
            offered++;
            FeederLink link = new FeederLink(mc, producer, false);
            link.named(feederName + ", lane connection " + offered);
            open.add(link);
            free.add(link);
            return null;
        }
        if (first == null) {
            return null; // it closed, or said nothing: nobody to tell
        }
        return first instanceof Message.FeederHello
                ? alreadyFed()
                : "producer '" + producer + "' is fed already;"
                        + " a connection to its feeder socket after its feeder's may only be one of its lane connections"
                        + " (FEEDER_LANE), not " + first.getClass().getSimpleName();
    }

    private String alreadyFed() {
        return "producer '" + producer + "' already has a feeder (pid " + hello.pid() + ", " + hello.client()
                + "); one feeder per producer: feed another name (another producer)";
    }

    /**
     * Has the feeder load {@code order} as epoch {@code epoch}'s part for the lane {@code sink} fills, on a free lane
     * connection, into {@code arena} (null: the lane's own; the main arena for a finite stream's tail, lane 0);
     * returns once the epoch part was published.
     *
     * @throws FeederFailedException no lane connection is free within the hello timeout, or the feeder failed the lane
     */
    void feed(long epoch, int[] order, BatchSink sink, Path arena) throws InterruptedException {
        int lane = sink.lane();
        FeederLink link = free.poll(helloTimeout.toNanos(), TimeUnit.NANOSECONDS);
        if (link == null) {
            throw new FeederFailedException(feederName + " has no free lane connection for lane " + lane + " of"
                    + " producer '" + producer + "' within " + helloTimeout.toSeconds() + " s (it declared "
                    + hello.lanes() + ", " + offered + " connected); was it stopped?");
        }
        boolean done = false;
        try {
            link.feedInto(sink);
            String at = " for lane " + lane;
            Path into = arena != null ? arena : directory.resolve(ProducerDirectory.LANE_FILE_PREFIX + lane);
            link.send(new Message.LaneStart(lane, into.toString()), at);
            link.sendOrder(epoch, order);
            FeederEpoch frames = new FeederEpoch(
                    epoch, null, order.length, "of its order lane " + lane + " sent", hello, link.who(), 1, 0, link);
            while (!done) {
                Object o = link.next(feederTimeout);
                if (o == null) {
                    throw link.fail(link.who() + " sent nothing for " + feederTimeout.toSeconds() + " s" + frames.at()
                            + " of lane " + lane + " (is it stopped or stuck in its loader?)");
                }
                done = frames.take(o);
            }
        } catch (SourceStoppedException e) {
            // a lane connection does not stop the stream: its feeder's main connection says what the feeder does
            throw new FeederFailedException(link.who() + " stopped loading lane " + lane + ": " + e.getMessage());
        } finally {
            if (done) {
                free.add(link);
            } else {
                release(link, lane);
            }
        }
    }

    /** Stops the lane's work on {@code link}: free again once the feeder says it holds nothing of it, else closed. */
    private void release(FeederLink link, int lane) {
        if (!link.gone()) {
            link.sendQuietly(new Message.LaneStop(lane));
            // it answers once its loader hands it the batch it is loading: as long as the feeder timeout allows
            long deadline = System.nanoTime() + feederTimeout.toNanos();
            try {
                for (long left; (left = deadline - System.nanoTime()) > 0; ) {
                    Object o = link.next(Duration.ofNanos(left));
                    if (o instanceof Message.LaneStop s && s.lane() == lane) {
                        if (!closed) {
                            free.add(link);
                        }
                        return;
                    }
                    if (o == null || o instanceof FeederEpoch.Ended) {
                        break;
                    }
                    // claims, publishes and the epoch's end sent before it read LANE_STOP: void now
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            log.warn(
                    "producer '{}': {} did not answer LANE_STOP {}; the connection is closed",
                    producer,
                    link.who(),
                    lane);
        }
        open.remove(link);
        link.close();
    }

    /** Closes every lane connection. */
    void close() {
        synchronized (this) {
            closed = true;
        }
        for (FeederLink link : open) {
            link.close();
        }
        for (SocketChannel ch : arriving) {
            closeQuietly(ch);
        }
    }

    private static void closeQuietly(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // gone either way
        }
    }
}
