package io.tensorsocket.producer;

import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StreamGeometry;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steps of a {@link Lane}'s thread that touch the producer's state, each under the producer's lock: the move
 * (MOVE sent, MOVED awaited), the orders it loads, its claims and publishes (to each member from where it moved on,
 * none while a member's move waits), never past the main stream, and a member's return to the main stream once it
 * caught up; a member that stalls its lane, or does not answer its move, is evicted, a source that fails in it fails
 * its members. Which consumers move, and when, is {@link Lanes}'.
 */
final class LaneSteps {
    private static final Logger log = LoggerFactory.getLogger(Lanes.class);

    private final Lanes lanes;
    private final ReentrantLock lock;
    private final Condition changed;
    private final ServingRules rules;
    private final StreamGeometry geometry;
    private final SlotTable mainSlots;
    private final Attached consumers;
    private final ProducerStream stream;
    private final Tails tails;

    LaneSteps(
            Lanes lanes,
            ReentrantLock lock,
            Condition changed,
            ServingRules rules,
            StreamGeometry geometry,
            SlotTable mainSlots,
            Attached consumers,
            ProducerStream stream,
            Tails tails) {
        this.lanes = lanes;
        this.tails = tails;
        this.lock = lock;
        this.changed = changed;
        this.rules = rules;
        this.geometry = geometry;
        this.mainSlots = mainSlots;
        this.consumers = consumers;
        this.stream = stream;
    }

    /**
     * Moves {@code lane}'s founding members (a consumer, or a job's ranks), now that its arena exists: assigns them,
     * sends its MOVE and waits for their MOVED: the lane starts at the least of their positions, returned; -1 if they
     * left. Each takes its batches from its own.
     */
    long awaitMoved(Lane lane, SharedArena made) throws InterruptedException {
        lock.lock();
        try {
            lane.arena(made);
            for (ConsumerSession m : lane.members) {
                if (m.attached && m.lane == null) {
                    Lanes.assign(m, lane);
                }
            }
            if (!open(lane)) {
                return -1;
            }
            for (ConsumerSession m : List.copyOf(lane.members)) {
                m.moveSentAt = System.nanoTime();
                if (!m.sendEvent(lane.move())) {
                    consumers.unreachable(m);
                }
            }
            awaitJoins(lane);
            if (!open(lane)) {
                return -1;
            }
            long from = Long.MAX_VALUE;
            for (ConsumerSession m : lane.members) {
                from = Math.min(from, m.laneFrom);
            }
            long epoch = geometry.epochOf(from);
            if (lane.plan != null) {
                lane.stream.resumeAnywhere(epoch, from - geometry.position(epoch, 0), lane.plan.end());
            } else {
                lane.stream.resumeAt(epoch, from - geometry.position(epoch, 0)); // a boundary: Lanes.moved checked it
            }
            lane.movedAt = from;
            for (ConsumerSession m : lane.members) {
                endsEpochBefore(m);
            }
            return from;
        } finally {
            lock.unlock();
        }
    }

    /** The order of {@code epoch} for {@code lane}, once drawn; null where its stream ends before it. */
    int[] orderFor(Lane lane, long epoch) throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                check(lane);
                long last = rules.epochs();
                if ((last > 0 && epoch >= last) || (lanes.mainEnd() >= 0 && epoch >= lanes.mainEnd())) {
                    if (last > 0 && epoch == last) { // a finite stream's end: its members' tails, if owed
                        if (!lanes.tailsDecided() && lanes.mainEnd() < 0) {
                            changed.awaitNanos(TimeUnit.MILLISECONDS.toNanos(100));
                            continue;
                        }
                        int tail = tails.ofMembers(lane.members, last);
                        int[] order = lanes.order(epoch);
                        if (order != null && tail > lane.stream.nextSample()) {
                            return Arrays.copyOf(order, tail);
                        }
                    }
                    for (ConsumerSession m : lane.members) {
                        m.sendEvent(new Message.EndOfStream(epoch));
                    }
                    return null;
                }
                if (atMainStream(lane)) {
                    if (rejoins(lane)) {
                        return null;
                    }
                    changed.awaitNanos(TimeUnit.MILLISECONDS.toNanos(100));
                    continue;
                }
                int[] order = lanes.order(epoch);
                if (order != null) {
                    return order;
                }
                changed.awaitNanos(TimeUnit.SECONDS.toNanos(1));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code lane} emitted epoch {@code epoch}: its members that read it are sent its end; false where it was the tail of
     * a finite stream ({@link Tails}), after which the stream ends for them.
     */
    boolean endEpoch(Lane lane, long epoch) {
        lock.lock();
        try {
            check(lane);
            if (rules.epochs() > 0 && epoch >= rules.epochs()) {
                for (ConsumerSession m : lane.members) {
                    m.sendEvent(new Message.EndOfStream(epoch));
                }
                return false;
            }
            Message.EpochEnd end = lane.end(epoch);
            long next = geometry.position(epoch + 1, 0);
            for (ConsumerSession m : lane.members) {
                if (m.laneFrom < next && m.lastEpochEnd < epoch) { // one that joined later had it from the main stream
                    m.sendEvent(end);
                }
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** {@code lane} loaded the rest of its resumed consumer's epoch: the stream ends for it there. */
    void endResumed(Lane lane) {
        lock.lock();
        try {
            check(lane);
            for (ConsumerSession m : lane.members) {
                m.sendEvent(new Message.EndOfStream(geometry.epochOf(lane.plan.end())));
            }
        } finally {
            lock.unlock();
        }
    }

    /** The next claim of {@code lane}, batch {@code seq} of its own: waits for its slot, evicting a consumer that stalls it. */
    SlotClaim claim(Lane lane, long seq, SlotTable slots) {
        lock.lock();
        try {
            int slot = slots.slotOf(seq);
            long deadline = System.nanoTime() + rules.stallTimeout().toNanos();
            while (true) {
                check(lane);
                if (awaitJoins(lane)) {
                    deadline = System.nanoTime() + rules.stallTimeout().toNanos();
                    continue;
                }
                if (lane.plan == null && atMainStream(lane)) {
                    if (rejoins(lane)) {
                        throw new Lane.LaneClosed();
                    }
                    changed.awaitNanos(TimeUnit.MILLISECONDS.toNanos(100)); // until it publishes more
                    deadline = System.nanoTime() + rules.stallTimeout().toNanos();
                    continue;
                }
                if (slots.isFree(slot)) {
                    return lane.claimed(seq, slot);
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    long held = lane.seqBase + slots.seqIn(slot);
                    for (ConsumerSession m : List.copyOf(lane.members)) {
                        if (m.held.contains(held)) {
                            evict(
                                    m,
                                    "held batch " + held + " of lane " + lane.number + " for more than "
                                            + rules.stallTimeout().toMillis() + " ms");
                        }
                    }
                    deadline = System.nanoTime() + rules.stallTimeout().toNanos();
                    continue;
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Lane.LaneClosed();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Publishes {@code lane}'s claim {@code c} of {@code n} samples to each member from whose place on it lies, once no
     * member's move waits (a joining member takes the lane's batches from where it answers).
     */
    void publish(Lane lane, SlotClaim c, int n) {
        lock.lock();
        try {
            awaitJoins(lane);
            check(lane);
            Message.BatchReady ready = lane.published(c, n);
            long start = lane.batch(ready.seq()).start(geometry);
            for (ConsumerSession m : List.copyOf(lane.members)) {
                if (start >= m.laneFrom && start < m.until) {
                    lane.hold(ready.seq());
                    m.held.addLast(ready.seq());
                    m.batchesSent++;
                    if (!m.sendEvent(ready)) {
                        consumers.unreachable(m);
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Lane.LaneClosed();
        } finally {
            lock.unlock();
        }
    }

    /**
     * While a member's move waits for its answer: waits for it (evicting one past its deadline) and returns true, the
     * caller to look again at what may have changed meanwhile; false when no move waited.
     */
    private boolean awaitJoins(Lane lane) throws InterruptedException {
        boolean waited = false;
        for (ConsumerSession joining; (joining = lane.joining()) != null && open(lane); ) {
            waited = true;
            long left = moveDeadline(joining) - System.nanoTime();
            if (left <= 0) {
                evict(joining, unanswered(lane)); // its departure takes it from the lane's members
            } else {
                changed.awaitNanos(left);
            }
        }
        return waited;
    }

    private long moveDeadline(ConsumerSession s) {
        return s.moveSentAt + rules.stallTimeout().toNanos();
    }

    private String unanswered(Lane lane) {
        return "did not answer its move to lane " + lane.number + " within "
                + rules.stallTimeout().toMillis() + " ms";
    }

    /**
     * {@code m} moved at the start of an epoch: it read every batch of the epoch before, whose EPOCH_END the main stream
     * may have sent to the lanes' consumers only (it had been chosen to move already) and no lane will send. It is sent
     * that end now, before any batch of its lane, unless it had it.
     */
    void endsEpochBefore(ConsumerSession m) {
        long epoch = geometry.epochOf(m.laneFrom);
        if (epoch < 1 || m.laneFrom != geometry.position(epoch, 0) || m.lastEpochEnd >= epoch - 1) {
            return;
        }
        m.sendEvent(new Message.EpochEnd(epoch - 1, geometry.batchesPerEpoch(), geometry.samplesPerEpoch()));
    }

    /** Whether {@code lane} loaded all the main stream published: it never runs ahead of it. */
    private boolean atMainStream(Lane lane) {
        return lane.stream.nextPosition() >= stream.nextPosition() && lanes.mainEnd() < 0;
    }

    /**
     * Whether {@code lane}'s members, its lane level with the main stream, caught up with it: each that read all the lane
     * gave it but the batches its current batch spans (the faster consumers slowed down or left) rejoins the main
     * stream there (MOVE to lane 0, keeping what it holds); the lane ends with its last member.
     */
    private boolean rejoins(Lane lane) {
        for (ConsumerSession s : List.copyOf(lane.members)) {
            if (lane.stream.nextPosition() - s.position
                    > (long) geometry.slotsNeeded(Lanes.spanOf(s)) * geometry.producerBatchSize()) {
                continue;
            }
            s.lane = null;
            lane.members.remove(s);
            lanes.rejoined(s);
            log.info(
                    "{} caught up with the main stream of producer '{}' at epoch {}, sample {}: it reads it again{}",
                    s.describe(),
                    rules.producerName(),
                    lane.stream.nextEpoch(),
                    lane.stream.nextSample(),
                    lane.members.isEmpty()
                            ? ", and lane " + lane.number + " ends after loading " + lane.samplesLoaded + " samples"
                            : "");
            if (!s.sendEvent(new Message.Move(0, mainSlots.count(), stream.publishedSeq() + 1))) {
                consumers.unreachable(s);
            }
            changed.signalAll();
        }
        if (lane.members.isEmpty()) {
            lane.closed = true;
            return true;
        }
        return false;
    }

    /** The source failed in {@code lane}: its consumer is told so, as a main stream's loader failure would be. */
    void failed(Lane lane, Throwable t) {
        lock.lock();
        try {
            String msg = "the loader of producer '" + rules.producerName() + "' failed in lane " + lane.number
                    + " (epoch " + lane.stream.nextEpoch() + "): " + t;
            log.error(msg, t);
            for (ConsumerSession m : List.copyOf(lane.members)) {
                if (m.attached && m.lane == lane) {
                    m.send(new Message.Error(Message.ErrorCode.LOADER_FAILED, msg));
                    consumers.detach(m, "its lane failed");
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private boolean open(Lane lane) {
        if (lane.closed) {
            return false;
        }
        for (ConsumerSession m : lane.members) {
            if (m.attached && m.lane == lane) {
                return true;
            }
        }
        return false;
    }

    private void check(Lane lane) {
        if (!open(lane)) {
            throw new Lane.LaneClosed();
        }
    }

    private void evict(ConsumerSession s, String what) {
        String msg = s.describe() + " " + what + "; it was disconnected. Release batches sooner (close them or ask"
                + " for the next), or raise the producer's stall timeout";
        log.warn("evicting {}", msg);
        s.send(new Message.Error(Message.ErrorCode.EVICTED, msg));
        consumers.detach(s, "evicted");
    }
}
