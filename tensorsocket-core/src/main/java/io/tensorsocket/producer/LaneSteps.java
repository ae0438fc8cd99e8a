package io.tensorsocket.producer;

import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StreamGeometry;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steps of a {@link Lane}'s thread that touch the producer's state, each under the producer's lock: the move
 * (MOVE sent, MOVED awaited), the orders it loads, its claims and publishes, never past the main stream, and the
 * consumer's return to the main stream once it caught up; a consumer that stalls its lane is evicted, a source that
 * fails in it fails that consumer. Which consumers move, and when, is {@link Lanes}'.
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

    LaneSteps(
            Lanes lanes,
            ReentrantLock lock,
            Condition changed,
            ServingRules rules,
            StreamGeometry geometry,
            SlotTable mainSlots,
            Attached consumers,
            ProducerStream stream) {
        this.lanes = lanes;
        this.lock = lock;
        this.changed = changed;
        this.rules = rules;
        this.geometry = geometry;
        this.mainSlots = mainSlots;
        this.consumers = consumers;
        this.stream = stream;
    }

    /** Sends {@code lane}'s MOVE and waits for its consumer's MOVED: the position to start at, or -1 if it left. */
    long awaitMoved(Lane lane, SharedArena made) throws InterruptedException {
        lock.lock();
        try {
            lane.arena(made);
            if (!open(lane)) {
                return -1;
            }
            if (!lane.session.sendEvent(lane.move())) {
                consumers.unreachable(lane.session);
                return -1;
            }
            long deadline = System.nanoTime() + rules.stallTimeout().toNanos();
            while (lane.movedAt < 0 && open(lane)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    evict(
                            lane,
                            "did not answer its move to lane " + lane.number + " within "
                                    + rules.stallTimeout().toMillis() + " ms");
                    return -1;
                }
                changed.awaitNanos(left);
            }
            return open(lane) ? lane.movedAt : -1;
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
                if ((rules.epochs() > 0 && epoch >= rules.epochs())
                        || (lanes.mainEnd() >= 0 && epoch >= lanes.mainEnd())) {
                    lane.session.sendEvent(new Message.EndOfStream(epoch));
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

    void endEpoch(Lane lane, long epoch) {
        lock.lock();
        try {
            check(lane);
            lane.session.sendEvent(lane.end(epoch));
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
                if (atMainStream(lane)) {
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
                    evict(
                            lane,
                            "held batch " + (lane.seqBase + slots.seqIn(slot)) + " of lane " + lane.number
                                    + " for more than " + rules.stallTimeout().toMillis() + " ms");
                    throw new Lane.LaneClosed();
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

    /** Publishes {@code lane}'s claim {@code c} of {@code n} samples to its consumer. */
    void publish(Lane lane, SlotClaim c, int n) {
        lock.lock();
        try {
            check(lane);
            Message.BatchReady ready = lane.published(c, n);
            lane.session.held.addLast(ready.seq());
            lane.session.batchesSent++;
            if (!lane.session.sendEvent(ready)) {
                consumers.unreachable(lane.session);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code lane} loaded all the main stream published: it never runs ahead of it. */
    private boolean atMainStream(Lane lane) {
        return lane.stream.nextPosition() >= stream.nextPosition() && lanes.mainEnd() < 0;
    }

    /**
     * Whether {@code lane}'s consumer, its lane level with the main stream, caught up with it: it read all the lane gave
     * it but the batches its current batch spans (the faster consumers slowed down or left). It then rejoins the main
     * stream there (MOVE to lane 0, keeping what it holds) and the lane ends.
     */
    private boolean rejoins(Lane lane) {
        ConsumerSession s = lane.session;
        if (lane.stream.nextPosition() - s.position
                > (long) geometry.slotsNeeded(s.hello.batchSize()) * geometry.producerBatchSize()) {
            return false;
        }
        s.lane = null;
        lanes.rejoined(s);
        lane.closed = true;
        log.info(
                "{} caught up with the main stream of producer '{}' at epoch {}, sample {}: it reads it again, and lane"
                        + " {} ends after loading {} samples for it",
                s.describe(),
                rules.producerName(),
                lane.stream.nextEpoch(),
                lane.stream.nextSample(),
                lane.number,
                lane.samplesLoaded);
        if (!s.sendEvent(new Message.Move(0, mainSlots.count(), stream.publishedSeq() + 1))) {
            consumers.unreachable(s);
        }
        changed.signalAll();
        return true;
    }

    /** The source failed in {@code lane}: its consumer is told so, as a main stream's loader failure would be. */
    void failed(Lane lane, Throwable t) {
        lock.lock();
        try {
            String msg = "the loader of producer '" + rules.producerName() + "' failed in lane " + lane.number
                    + " (epoch " + lane.stream.nextEpoch() + "): " + t;
            log.error(msg, t);
            if (lane.session.attached) {
                lane.session.send(new Message.Error(Message.ErrorCode.LOADER_FAILED, msg));
                consumers.detach(lane.session, "its lane failed");
            }
        } finally {
            lock.unlock();
        }
    }

    private boolean open(Lane lane) {
        return !lane.closed && lane.session.attached && lane.session.lane == lane;
    }

    private void check(Lane lane) {
        if (!open(lane)) {
            throw new Lane.LaneClosed();
        }
    }

    private void evict(Lane lane, String what) {
        ConsumerSession s = lane.session;
        String msg = s.describe() + " " + what + "; it was disconnected. Release batches sooner (close them or ask"
                + " for the next), or raise the producer's stall timeout";
        log.warn("evicting {}", msg);
        s.send(new Message.Error(Message.ErrorCode.EVICTED, msg));
        consumers.detach(s, "evicted");
    }
}
