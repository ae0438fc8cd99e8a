package io.tensorsocket.producer;

import io.tensorsocket.IndexedSource;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SpaceReservation;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.RankShare;
import io.tensorsocket.stream.StreamGeometry;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A producer's lanes: which consumers fell behind far enough ({@link LaneRule}) to be served from a {@link Lane} of
 * their own rather than waited for, at most {@code bound} at once, and the move itself (MOVE, the consumer's MOVED,
 * the main batches it gives back). It keeps the orders the main stream drew ({@link DrawnOrders}) for the lanes to
 * load again; what a lane's thread does under the producer's lock is {@link LaneSteps}'. Beyond the bound, for a
 * consumer that cannot move (a rank of a job), and where no lane's arena fits in the shared memory free ({@link
 * LaneSizing}) or can be made ({@link LaneRefusals}), the slowest consumer sets the pace as before; {@link PaceWatch}
 * says so.
 *
 * <p>Everything here runs under the producer's lock.
 */
final class Lanes {
    private static final Logger log = LoggerFactory.getLogger(Lanes.class);

    /**
     * What a producer needs to run lanes: a source that loads by index on two threads at once, where to put them, the
     * idle cores a lane needs at the least, and what loading a sample costs ({@link LoadCpu}).
     */
    record Supply(
            IndexedSource source,
            int bound,
            double idleCores,
            ProducerDirectory directory,
            long sessionId,
            long pid,
            LoadCpu loadCpu) {}

    private final ReentrantLock lock;
    private final Condition changed;
    private final ServingRules rules;
    private final StreamGeometry geometry;
    private final ArenaLayout mainLayout;
    private final SlotTable mainSlots;
    private final Attached consumers;
    private final ProducerStream stream;
    private final LaneRule<ConsumerSession> rule = new LaneRule<>();
    private final LaneRefusals refusals;
    private final DrawnOrders orders = new DrawnOrders();
    private final LaneSteps steps;
    private final HostCpu cpu;

    private Supply supply;
    /** What loads resumed consumers' epochs: the source, whatever the bound of laggards' lanes; null without one. */
    private Supply loads;

    private DrawLog drawLog;
    private Lane[] running = new Lane[0];
    /** The lanes loading the rest of a resumed consumer's epoch, numbered after the laggards' ({@link #resume}). */
    private final List<Lane> resumes = new ArrayList<>();

    private boolean toldFull;
    private long started;
    /** The epoch the main stream ended before, or -1 while it runs. */
    private long mainEnd = -1;
    /** Whether a finite stream published its epochs and decided the tails it owes ({@link Tails}). */
    private boolean tailsDecided;

    Lanes(
            ReentrantLock lock,
            Condition changed,
            ServingRules rules,
            StreamGeometry geometry,
            ArenaLayout mainLayout,
            SlotTable mainSlots,
            Attached consumers,
            ProducerStream stream,
            Tails tails,
            HostCpu cpu) {
        this.lock = lock;
        this.cpu = cpu;
        cpu.idleCores(System.nanoTime()); // its first reading: the idle cores are known at the first judgement
        this.changed = changed;
        this.rules = rules;
        this.geometry = geometry;
        this.mainLayout = mainLayout;
        this.mainSlots = mainSlots;
        this.consumers = consumers;
        this.stream = stream;
        this.steps = new LaneSteps(this, lock, changed, rules, geometry, mainSlots, consumers, stream, tails);
        this.refusals = new LaneRefusals(rule, rules.producerName());
    }

    /** Runs lanes from {@code s} (none before, or with a bound of 0). */
    void serve(Supply s) {
        supply = s.bound() > 0 ? s : null;
        loads = s;
        running = new Lane[Math.max(0, s.bound())];
        drawLog = DrawLog.open(s.directory().path().resolve(ProducerDirectory.DRAWS_FILE), s.source());
    }

    StreamGeometry geometry() {
        return geometry;
    }

    IndexedSource source() {
        return loads.source();
    }

    long sessionId() {
        return loads.sessionId();
    }

    long pid() {
        return loads.pid();
    }

    void share(Path file) throws IOException {
        loads.directory().share(file, false);
    }

    /** The order the main stream drew for {@code epoch}, or null. */
    int[] order(long epoch) {
        return orders.order(epoch);
    }

    /** The epoch the main stream ended before, or -1 while it runs. */
    long mainEnd() {
        return mainEnd;
    }

    /** {@code s} caught up and reads the main stream again. */
    void rejoined(ConsumerSession s) {
        rule.rejoined(s, System.nanoTime());
    }

    /**
     * How long the producer may wait for a slot before it judges the holders again ({@link #waited}): a holder that
     * stalls altogether would otherwise be judged only when the stall timeout evicts it.
     */
    long judgeEvery() {
        return supply == null ? Long.MAX_VALUE : LaneRule.AFTER_NANOS;
    }

    /** The steps of a lane's thread. */
    LaneSteps steps() {
        return steps;
    }

    // ------------------------------------------------------------------------------------ the main stream's side

    /**
     * The main stream drew {@code order} for {@code epoch}, keeping the chunks cut at {@code boundaries}: logged for
     * consumers' checkpoints ({@link DrawLog}), and kept while a lane may load that epoch again.
     */
    void drew(long epoch, int[] order, int[] boundaries) {
        if (drawLog != null) {
            drawLog.drew(epoch, boundaries);
        }
        drew(epoch, order);
    }

    /** The main stream drew {@code order} for {@code epoch}: kept while a lane may load that epoch again. */
    private void drew(long epoch, int[] order) {
        if (supply == null) {
            return;
        }
        orders.drew(epoch, order);
        // a consumer still to be moved stands inside the arena: as many epochs back as its slots span
        long span = (mainSlots.count() * (long) geometry.producerBatchSize()) / geometry.samplesPerEpoch() + 2;
        long oldest = epoch - span;
        for (Lane l : running) {
            if (l != null) {
                oldest = Math.min(oldest, l.movedAt < 0 ? epoch - span : l.stream.nextEpoch());
            }
        }
        orders.forgetBefore(oldest);
    }

    /**
     * The main stream published its last epoch and decided the tails it owes: {@code order} is the order of the epoch
     * after ({@code epoch}), whose first samples the tails are, or null where none is owed. Lanes load their members'.
     */
    void tailsDecided(long epoch, int[] order, int[] boundaries) {
        if (order != null) {
            drew(epoch, order, boundaries);
        }
        tailsDecided = true;
        changed.signalAll();
    }

    /** Whether the tails a finite stream owes were decided ({@link #tailsDecided(long, int[], int[])}). */
    boolean tailsDecided() {
        return tailsDecided;
    }

    /** The main stream ended before epoch {@code epoch}: lanes end there too. */
    void mainEnded(long epoch) {
        mainEnd = epoch;
        if (supply != null && !serving()) {
            supply.source().lanesDone();
        }
    }

    /** Whether a lane still serves a consumer: the producer drains only after they are done. */
    boolean serving() {
        for (Lane l : running) {
            if (l != null) {
                return true;
            }
        }
        return !resumes.isEmpty();
    }

    // ------------------------------------------------------------------------------------ resumed consumers

    /**
     * Why a consumer of {@code hello} cannot resume here, or null: resuming loads the rest of its epoch by index, on a
     * lane of its own, in an arena that must fit.
     */
    String cannotResume(Message.Hello hello) {
        if (loads == null) {
            return "its source cannot load samples by index on a lane beside the main stream (a source that fixes its"
                    + " own order, or a feeder without lane connections)";
        }
        if (drawLog == null) {
            return "it could not log its draws";
        }
        int span = hello.inJob()
                ? (int) Math.min(
                        Integer.MAX_VALUE, new RankShare(hello.rank(), hello.worldSize()).span(hello.batchSize()))
                : hello.batchSize();
        int least = LaneSizing.least(geometry, span);
        if (LaneSizing.slots(mainLayout.batch(), least, resumeSlots(least), freeBytes()) == 0) {
            return "the shared memory left holds no lane of " + least + " slots of " + (mainLayout.slotBytes() >> 10)
                    + " KiB";
        }
        return null;
    }

    /**
     * The slots a resumed consumer's lane wants: those its batch size needs and two more, for the loader to fill one
     * while it reads the others. It lives for less than an epoch, and its first batch waits for its arena's first
     * touch, which a small one keeps short.
     */
    private int resumeSlots(int least) {
        return Math.min(Math.max(least, mainSlots.count() / 4), least + 2);
    }

    /** {@code s}, welcomed, resumes {@code plan}: a lane of its own loads it (checked by {@link #cannotResume}). */
    void resume(ConsumerSession s, ResumePlan plan) {
        int i = resumes.indexOf(null);
        if (i < 0) {
            i = resumes.size();
            resumes.add(null);
        }
        int number = running.length + 1 + i;
        int least = LaneSizing.least(geometry, spanOf(s));
        int slots = LaneSizing.slots(mainLayout.batch(), least, resumeSlots(least), freeBytes());
        Path file = loads.directory().path().resolve(ProducerDirectory.LANE_FILE_PREFIX + number);
        Lane lane = new Lane(
                number, ++started, List.of(s), this, ArenaLayout.of(mainLayout.batch(), Math.max(1, slots)), file);
        lane.plan = plan;
        resumes.set(i, lane);
        log.info(
                "producer '{}' loads the rest of the epoch {} resumes ({} samples, from stream position {}) on lane {}",
                rules.producerName(),
                s.describe(),
                plan.end() - plan.from(),
                plan.from(),
                number);
        Thread.ofPlatform()
                .daemon()
                .name("tensorsocket-lane-" + number + "-" + rules.producerName())
                .start(lane);
    }

    /**
     * The producer waited {@code nanos} until {@code now} for a slot {@code holders} held: while another consumer of the
     * main stream had read everything published and waited too, the wait counts against them ({@link LaneRule}); one
     * that crosses the line is moved, while lanes are free.
     */
    void waited(List<ConsumerSession> holders, long nanos, long now) {
        if (supply == null || holders.isEmpty()) {
            return;
        }
        for (ConsumerSession h : holders) {
            if (h.lane == null
                    && h.hello.lanes()
                    && consumers.heldBackBy(h, holders, stream.nextPosition())
                    && rule.waitedFor(h, nanos, now)) {
                start(h, nanos, now);
            }
        }
    }

    /**
     * Moves {@code s} to a lane: to a free one, with every rank of its job if it is a rank (a job's ranks move
     * together, as they read together); to a running lane behind it when none is free and it is no rank; else it sets
     * the pace, said once.
     */
    private void start(ConsumerSession s, long nanos, long now) {
        List<ConsumerSession> group = consumers.jobOf(s);
        for (ConsumerSession r : group) {
            if (r.lane != null || !r.hello.lanes() || founding(r)) {
                return; // a rank already moving, or one that cannot: the job keeps the main stream
            }
        }
        int free = -1;
        for (int i = 0; i < running.length && free < 0; i++) {
            if (running[i] == null) {
                free = i;
            }
        }
        Lane behind = free < 0 && !s.hello.inJob() ? laneBehind(s) : null;
        if (behind != null) {
            join(s, behind, nanos);
            return;
        }
        if (free < 0) {
            if (!toldFull) {
                toldFull = true;
                log.info(
                        "producer '{}' would move {} to a lane of its own (it holds the others back), but all {} lanes"
                                + " run; it sets the pace until one ends (serve --lanes, or lanes() of the producer, runs"
                                + " more)",
                        rules.producerName(),
                        s.describe(),
                        running.length);
            }
            return;
        }
        int span = 1;
        for (ConsumerSession r : group) {
            span = Math.max(span, spanOf(r));
        }
        int needed = LaneSizing.least(geometry, span);
        int wanted = Math.min(mainSlots.count(), Math.max(needed, 16));
        int least = Math.min(needed, wanted);
        long room = freeBytes();
        int slots = LaneSizing.slots(mainLayout.batch(), least, wanted, room);
        if (slots == 0) {
            refusals.noRoom(s, group, least, mainLayout.slotBytes(), room);
            return;
        }
        double idle = cpu.idleCores(now);
        // a floor of 0: lanes whatever the load; NaN: this host does not say (not Linux); the lane opens as before
        double cores = supply.idleCores() > 0 ? Math.max(supply.idleCores(), spends(group, now)) : 0;
        if (idle < cores) {
            refusals.noCpu(s, group, idle, cores);
            return;
        }
        for (ConsumerSession r : group) {
            rule.forget(r);
        }
        Path file = supply.directory().path().resolve(ProducerDirectory.LANE_FILE_PREFIX + (free + 1));
        Lane lane = new Lane(free + 1, ++started, group, this, ArenaLayout.of(mainLayout.batch(), slots), file);
        running[free] = lane; // its founders are assigned once its arena exists, right before their MOVE
        log.info(
                "producer '{}' moves {} to lane {}: the others waited for its releases while they read ahead ({} ms"
                        + " in the last {} s). From its next batch it reads at its own pace from batches the source"
                        + " loads again for it ({} slots of {} KiB); the others read on at theirs",
                rules.producerName(),
                s.hello.inJob() ? "job '" + s.hello.job() + "' (its " + group.size() + " ranks)" : s.describe(),
                lane.number,
                Math.max(TimeUnit.NANOSECONDS.toMillis(LaneRule.AFTER_NANOS), TimeUnit.NANOSECONDS.toMillis(nanos)),
                TimeUnit.NANOSECONDS.toSeconds(LaneRule.WINDOW_NANOS),
                slots,
                mainLayout.slotBytes() >> 10);
        Thread.ofPlatform()
                .daemon()
                .name("tensorsocket-lane-" + lane.number + "-" + rules.producerName())
                .start(lane);
    }

    /**
     * The cores a lane for {@code group} would spend loading: their own pace (samples/s, the fastest's) times the CPU a
     * sample cost the source of late ({@link LoadCpu}); 0 where either is not known.
     */
    private double spends(List<ConsumerSession> group, long now) {
        double pace = 0;
        for (ConsumerSession r : group) {
            pace = Math.max(pace, r.ownPace());
        }
        return supply.loadCpu().coresAt(pace, now, stream.nextPosition());
    }

    /** What the file system holding the producer's directory has free; unbounded where it cannot say. */
    private long freeBytes() {
        try {
            return SpaceReservation.usableBytes(loads.directory().path());
        } catch (IOException e) {
            return Long.MAX_VALUE; // the lane's arena reports a full file system itself
        }
    }

    /**
     * The running lane {@code s} can join, every lane being taken: one that has started, waits for no other move, lies
     * behind {@code s}'s place (so that it will load every batch {@code s} has yet to read) and has the slots its batch
     * size needs; of those, the nearest behind it. Null if none.
     */
    private Lane laneBehind(ConsumerSession s) {
        Lane best = null;
        for (Lane l : running) {
            if (l != null
                    && !l.closed
                    && l.movedAt >= 0
                    && l.joining() == null
                    && l.stream.nextPosition() <= s.position
                    && l.fits(spanOf(s))
                    && (best == null || l.stream.nextPosition() > best.stream.nextPosition())) {
                best = l;
            }
        }
        return best;
    }

    /** Whether {@code s} founds a lane that is being made: it reads the main stream until its MOVE. */
    private boolean founding(ConsumerSession s) {
        for (Lane l : running) {
            if (l != null && l.movedAt < 0 && l.members.contains(s)) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code lane}'s arena could not be made (no room left after all, or the file system refused it): its founders,
     * never moved, keep the main stream ({@link LaneRefusals}). The lane's thread ends after this, freeing its place.
     */
    void notMade(Lane lane, Exception e) {
        lock.lock();
        try {
            refusals.notMade(lane, e);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code s} belongs to {@code lane} from now on, its move unanswered; of the lanes it read before, it keeps those
     * it still holds batches of.
     */
    static void assign(ConsumerSession s, Lane lane) {
        s.lane = lane;
        s.laneFrom = -1;
        s.lanes.removeIf(l -> s.held.stream().noneMatch(l::owns));
        s.lanes.add(lane);
    }

    /** The stream positions a batch of {@code s} spans: its batch size, or a rank's share of worldSize times it. */
    static int spanOf(ConsumerSession s) {
        if (!s.hello.inJob()) {
            return s.hello.batchSize();
        }
        long span = new RankShare(s.hello.rank(), s.hello.worldSize()).span(s.hello.batchSize());
        return (int) Math.min(Integer.MAX_VALUE, span);
    }

    /**
     * Moves {@code s} into running lane {@code lane}: it takes the lane's batches from where it answers on, and the lane
     * publishes nothing until it answered (within the stall timeout, {@link LaneSteps}).
     */
    private void join(ConsumerSession s, Lane lane, long nanos) {
        rule.forget(s);
        assign(s, lane);
        s.moveSentAt = System.nanoTime();
        lane.members.add(s);
        log.info(
                "producer '{}' moves {} to lane {}, beside {} (every lane runs): the others waited for its releases"
                        + " while they read ahead ({} ms in the last {} s). From its next batch it reads the lane's"
                        + " batches, at the pace of the lane's slowest; the others read on at theirs",
                rules.producerName(),
                s.describe(),
                lane.number,
                lane.founder().describe(),
                Math.max(TimeUnit.NANOSECONDS.toMillis(LaneRule.AFTER_NANOS), TimeUnit.NANOSECONDS.toMillis(nanos)),
                TimeUnit.NANOSECONDS.toSeconds(LaneRule.WINDOW_NANOS));
        if (!s.sendEvent(lane.move())) {
            consumers.unreachable(s);
        }
        changed.signalAll();
    }

    // ------------------------------------------------------------------------------------ the consumer's side

    /**
     * {@code s} answered MOVE: it keeps the main batches it was sent up to {@code position}, and gives back the rest.
     *
     * @return what is wrong with the answer (a protocol violation), or null
     */
    String moved(ConsumerSession s, long position) {
        Lane lane = s.lane;
        if (lane == null || s.laneFrom >= 0) {
            return "sent MOVED without a MOVE to answer";
        }
        boolean founding = lane.movedAt < 0;
        if (lane.plan != null) { // a resumed consumer's lane starts where it did not read on
            if (position != lane.plan.from()) {
                return "moved at stream position " + position + ", not where it resumes (" + lane.plan.from() + ")";
            }
            s.laneFrom = position;
            changed.signalAll();
            return null;
        }
        if (!founding && position < lane.stream.nextPosition()) {
            return "moved at stream position " + position + ", behind lane " + lane.number + "'s next batch (at "
                    + lane.stream.nextPosition() + ")";
        }
        long epoch = geometry.epochOf(position);
        if ((position - geometry.position(epoch, 0)) % geometry.producerBatchSize() != 0) {
            return "moved at stream position " + position + ", which is no batch boundary of the stream";
        }
        boolean boundary = position == s.position;
        for (long seq : s.held) {
            BatchPosition p = consumers.batchOf(s, seq);
            boundary |= p.start(geometry) == position || p.end(geometry) == position;
        }
        if (!boundary) {
            return "moved at stream position " + position + ", which is no boundary of the batches it holds";
        }
        for (Iterator<Long> it = s.held.iterator();
                it.hasNext(); ) { // what it gave back: the main stream's or a lane's
            long seq = it.next();
            if (consumers.batchOf(s, seq).start(geometry) >= position) {
                it.remove();
                consumers.releaseSlot(s, seq);
            }
        }
        s.laneFrom = position; // a founding member's: the lane starts at the least of them (LaneSteps.awaitMoved)
        if (!founding) {
            steps.endsEpochBefore(s);
        }
        changed.signalAll();
        return null;
    }

    /** {@code s} left: its lane, if it had one, ends. */
    void left(ConsumerSession s) {
        rule.forget(s);
        if (s.lane != null) {
            s.lane.members.remove(s);
            if (s.lane.members.isEmpty()) {
                s.lane.closed = true;
            }
            changed.signalAll();
        }
    }

    /** {@code lane}'s thread ends: its place is free again. */
    void ended(Lane lane) {
        lock.lock();
        try {
            lane.unmap();
            for (int i = 0; i < running.length; i++) {
                if (running[i] == lane) {
                    running[i] = null;
                }
            }
            int r = resumes.indexOf(lane);
            if (r >= 0) {
                resumes.set(r, null);
                while (!resumes.isEmpty() && resumes.getLast() == null) {
                    resumes.removeLast();
                }
            }
            toldFull = false;
            if (mainEnd >= 0 && !serving()) {
                supply.source().lanesDone(); // no lane starts once the main stream ended
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
