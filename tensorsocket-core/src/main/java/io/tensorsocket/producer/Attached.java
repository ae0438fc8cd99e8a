package io.tensorsocket.producer;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.ChunkedShuffle;
import io.tensorsocket.stream.StreamGeometry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumers attached to a producer and which batches each holds: handing a batch to a consumer counts it
 * as a holder of its slot, and a consumer that leaves, is evicted or cannot be reached releases everything
 * it held. Used under the producer's lock; {@code changed} is run (the lock's condition signalled) whenever
 * a consumer left, since slots may have come free. It also keeps the boundaries that the exact consumers' join
 * offsets put into the producer's next epochs ({@link ChunkedShuffle.Boundaries}): each goes when its consumer does.
 */
final class Attached {
    private static final Logger log = LoggerFactory.getLogger(Attached.class);

    private final Map<Integer, ConsumerSession> sessions = new LinkedHashMap<>();
    private final ChunkedShuffle.Boundaries boundaries = new ChunkedShuffle.Boundaries();
    private final SlotTable slots;
    private final StreamGeometry geometry;
    private final Runnable changed;
    private final BiConsumer<ConsumerSession, String> departed;
    private RingPool rings = new RingPool(null);
    private long evictions;

    /** {@code departed} is told of every consumer that left, and why, after it left. */
    Attached(SlotTable slots, StreamGeometry geometry, Runnable changed, BiConsumer<ConsumerSession, String> departed) {
        this.slots = slots;
        this.geometry = geometry;
        this.changed = changed;
        this.departed = departed;
    }

    /** Gives consumers that ask for one a ring of {@code pool}. */
    void ringsFrom(RingPool pool) {
        this.rings = pool;
    }

    int count() {
        return sessions.size();
    }

    /**
     * Whether a consumer of the main stream other than {@code holders}, within a batch of {@code end}, has read
     * everything published and would read faster than {@code holder} by its own pace ({@link
     * ConsumerSession#ownPace}), at least {@link #FASTER} times: one that {@code holder} truly holds back. Consumers
     * whose pace is not known yet ({@link ConsumerSession#paceUnknownYet}: trainers launched together, in their first
     * seconds) are not judged: by chance one of them is behind now and then. Past that, a holder that has not said its
     * pace (one stuck on its first batch never does) is judged by the waits alone, and a waiting consumer that has not
     * said its own is taken to be faster.
     */
    boolean heldBackBy(ConsumerSession holder, List<ConsumerSession> holders, long end) {
        long now = System.nanoTime();
        if (holder.paceUnknownYet(now)) {
            return false;
        }
        double pace = holder.ownPace();
        for (ConsumerSession s : sessions.values()) {
            if (s.lane == null
                    && !holders.contains(s)
                    && !s.paceUnknownYet(now)
                    && end - s.position
                            <= (long) geometry.slotsNeeded(s.hello.batchSize()) * geometry.producerBatchSize()) {
                double other = s.ownPace();
                if (pace <= 0 || other <= 0 || other >= FASTER * pace) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * How much faster by its own pace a waiting consumer must be than a holder for the holder to hold it back: trainers
     * of one speed, whose pace is their own step, trade the lead by chance and are nobody's laggard.
     */
    static final double FASTER = 1.25;

    /** Consumers that read the main stream: all but those a lane serves (or that are being moved to one). */
    int onMainStream() {
        int n = 0;
        for (ConsumerSession s : sessions.values()) {
            if (s.lane == null) {
                n++;
            }
        }
        return n;
    }

    /** Gives {@code s} its outlet (a ring, if it asked and one is free), before its WELCOME says which. */
    void prepare(ConsumerSession s) {
        rings.give(s);
    }

    /** {@code s} could not be welcomed: its ring goes back. */
    void unprepare(ConsumerSession s) {
        rings.takeBack(s);
    }

    void add(ConsumerSession s) {
        sessions.put(s.id, s);
        boundaries.add(boundaryOf(s));
    }

    /** Every attached consumer, in the order they joined. */
    List<ConsumerSession> all() {
        return List.copyOf(sessions.values());
    }

    /** The attached ranks of {@code s}'s job (itself among them), or {@code s} alone when it is no rank. */
    List<ConsumerSession> jobOf(ConsumerSession s) {
        if (!s.hello.inJob()) {
            return List.of(s);
        }
        List<ConsumerSession> ranks = new ArrayList<>();
        for (ConsumerSession c : sessions.values()) {
            if (c.hello.inJob() && c.hello.job().equals(s.hello.job())) {
                ranks.add(c);
            }
        }
        return ranks;
    }

    /** The consumer of id {@code id}, or null if none such is attached. */
    ConsumerSession get(int id) {
        return sessions.get(id);
    }

    /**
     * {@code s} relays the stream, and one of its own consumers joined at {@code offset} exactly: the offset is a
     * boundary of the next epochs as if that consumer had joined here, until {@link #releaseForRelay} or until
     * {@code s} leaves.
     */
    void keepForRelay(ConsumerSession s, int offset) {
        s.keptForRelay.add(offset);
        boundaries.add(offset);
    }

    /** The relay's consumer that joined at {@code offset} left: its boundary goes, if {@code s} kept one there (true). */
    boolean releaseForRelay(ConsumerSession s, int offset) {
        if (s.keptForRelay.remove(Integer.valueOf(offset))) {
            boundaries.remove(offset);
            return true;
        }
        return false;
    }

    /** The join offsets of the exact consumers attached now, sorted: what the next epoch's order must keep. */
    int[] boundaries() {
        return boundaries.sorted();
    }

    /** Where {@code s} cuts the producer's epochs: its join offset if it started exact mid-epoch, else 0 (nowhere). */
    private int boundaryOf(ConsumerSession s) {
        long sample = s.start.sample();
        return s.start.mode() == StartMode.EXACT && sample < geometry.samplesPerEpoch() ? (int) sample : 0;
    }

    /** Sends {@code ready} to {@code s}, which holds the batch from now on. */
    void hand(ConsumerSession s, Message.BatchReady ready) {
        s.held.addLast(ready.seq());
        slots.hold(ready.seq());
        s.batchesSent++;
        if (!s.sendEvent(ready)) {
            unreachable(s);
        }
    }

    /**
     * A send to {@code s} failed. Over a socket that means its peer closed: its reader tells why (a goodbye it sent
     * just before, or a lost connection) within a millisecond or so, and detaches it then; until then it is sent
     * nothing more, and after {@link #UNREACHABLE_NANOS} the heartbeat detaches it whatever it said. A full
     * descriptor ring is dropped at once.
     */
    void unreachable(ConsumerSession s) {
        if (!(s.events instanceof Outlet.Socket)) {
            detach(s, "descriptor ring full");
        } else if (s.unreachableSince == 0) {
            s.unreachableSince = System.nanoTime();
        }
    }

    /** How long a consumer whose socket refused a send may stay attached, waiting for its reader to say why. */
    static final long UNREACHABLE_NANOS = 2_000_000_000L;

    /** Hands the batch just published at {@code p} to every consumer whose stream includes it. */
    void published(BatchPosition p, Message.BatchReady ready) {
        for (ConsumerSession s : List.copyOf(sessions.values())) {
            if (s.start.sends(p, geometry)
                    && p.start(geometry) < s.until
                    && s.unreachableSince == 0
                    && s.lane == null
                    && s.resuming == null) {
                hand(s, ready);
            }
        }
    }

    /** Sends a stream event that holds no batch (an epoch's end, the end) to every consumer of the main stream. */
    void broadcast(Message event) {
        for (ConsumerSession s : List.copyOf(sessions.values())) {
            if (s.lane == null && s.resuming == null) {
                s.sendEvent(event);
            }
        }
    }

    /** Tells every consumer {@code error} (if given) and lets it go. */
    void dismissAll(String reason, Message.Error error) {
        for (ConsumerSession s : List.copyOf(sessions.values())) {
            if (error != null) {
                s.send(error);
            }
            detach(s, reason);
        }
    }

    /**
     * Evicts every consumer that holds batch {@code seq}, which the producer waited more than {@code stall}
     * to reuse the slot of; but one being moved to a lane, which its move's deadline judges ({@code LaneSteps}).
     */
    void evictHoldersOf(long seq, String producer, Duration stall) {
        BatchPosition batch = slots.batch(seq);
        for (ConsumerSession c : List.copyOf(sessions.values())) {
            if (c.held.contains(seq) && !(c.lane != null && c.laneFrom < 0)) { // a move's own deadline judges it
                String msg = c.describe() + " held batch " + seq + " (epoch " + batch.epoch() + ", batch "
                        + batch.index() + ") for more than " + stall.toMillis() + " ms while producer '"
                        + producer + "' waited for its slot; it was disconnected. Release batches sooner (close"
                        + " them or ask for the next), or raise the producer's stall timeout";
                log.warn("evicting {}", msg);
                evictions++;
                c.send(new Message.Error(Message.ErrorCode.EVICTED, msg));
                detach(c, "evicted");
            }
        }
    }

    long evictions() {
        return evictions;
    }

    /**
     * Records that {@code s} released the first {@code n} of {@code seqs}.
     *
     * @return the first of them {@code s} did not hold (a protocol violation), -1 if a slot came free, else -2
     */
    long release(ConsumerSession s, long[] seqs, int n) {
        boolean freed = false;
        for (int i = 0; i < n; i++) {
            if (!s.held.remove(seqs[i])) {
                return seqs[i];
            }
            s.position = Math.max(s.position, batchOf(s, seqs[i]).end(geometry));
            freed |= releaseSlot(s, seqs[i]);
        }
        return freed ? -1 : -2;
    }

    /** Where batch {@code seq}, which {@code s} holds, lies: a batch of the main stream or of one of its lanes. */
    BatchPosition batchOf(ConsumerSession s, long seq) {
        Lane lane = s.laneOf(seq);
        return lane != null ? lane.batch(seq) : slots.batch(seq);
    }

    /**
     * {@code s} no longer holds batch {@code seq} (the caller took it from {@code s.held}): one holder fewer of its
     * slot, in the main arena or its lane's; whether the slot came free.
     */
    boolean releaseSlot(ConsumerSession s, long seq) {
        Lane lane = s.laneOf(seq);
        return lane != null ? lane.release(seq) : slots.release(seq);
    }

    /** Sends a HEARTBEAT to every consumer sent nothing for {@code idleNanos} that has few enough unanswered. */
    void heartbeat(long now, long idleNanos) {
        for (ConsumerSession s : List.copyOf(sessions.values())) {
            if (s.unreachableSince != 0) {
                if (now - s.unreachableSince > UNREACHABLE_NANOS) {
                    detach(s, "connection lost");
                }
            } else if (now - s.lastSentNanos >= idleNanos
                    && s.heartbeatSendable()
                    && !s.send(new Message.Heartbeat())) {
                unreachable(s);
            }
        }
    }

    /** The status lines of the first {@link ProducerStatus#MAX_LISTED} consumers, with their shares of the pace. */
    List<ProducerStatus.Consumer> status(long now, long producerPosition, ToDoubleFunction<ConsumerSession> pace) {
        List<ProducerStatus.Consumer> list = new ArrayList<>();
        for (ConsumerSession c : sessions.values()) {
            if (list.size() == ProducerStatus.MAX_LISTED) {
                break;
            }
            list.add(c.status(now, producerPosition, geometry, pace.applyAsDouble(c)));
        }
        return list;
    }

    /** The consumers that hold batch {@code seq}. */
    List<ConsumerSession> holdersOf(long seq) {
        List<ConsumerSession> holders = new ArrayList<>(2);
        for (ConsumerSession c : sessions.values()) {
            if (c.held.contains(seq)) {
                holders.add(c);
            }
        }
        return holders;
    }

    /** Removes a consumer and releases everything it held. Idempotent. */
    void detach(ConsumerSession s, String why) {
        if (!s.attached) {
            return;
        }
        s.attached = false;
        sessions.remove(s.id);
        boundaries.remove(boundaryOf(s));
        for (int offset : s.keptForRelay) {
            boundaries.remove(offset);
        }
        s.keptForRelay.clear();
        s.leftAfterEpochs = s.epochsReadWhole(geometry);
        int n = s.held.size();
        for (long seq : s.held) {
            releaseSlot(s, seq);
        }
        s.held.clear();
        s.channel.close();
        rings.takeBack(s);
        log.info("{} left ({}); released {} batches; {} consumers remain", s.describe(), why, n, sessions.size());
        changed.run();
        departed.accept(s, why);
    }
}
