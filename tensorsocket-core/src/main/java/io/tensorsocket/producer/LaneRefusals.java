package io.tensorsocket.producer;

import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer that {@link LaneRule} would move but that gets no lane: no lane's arena fits in the shared memory free
 * ({@link LaneSizing}), the host has no idle CPU for it ({@link HostCpu}), or the arena of the lane started for it
 * could not be made. It keeps the main stream and sets the
 * pace, as without lanes, and the rule judges it again a window later; each of the three is said once per producer, with
 * what would let it move.
 *
 * <p>Bookkeeping and wording; not thread-safe (the producer's lock guards it).
 */
final class LaneRefusals {
    private static final Logger log = LoggerFactory.getLogger(Lanes.class);

    private final LaneRule<ConsumerSession> rule;
    private final String producer;
    private boolean toldNoRoom;
    private boolean toldNotMade;
    private boolean toldNoCpu;

    LaneRefusals(LaneRule<ConsumerSession> rule, String producer) {
        this.rule = rule;
        this.producer = producer;
    }

    /**
     * Not even {@code least} slots of {@code slotBytes} fit in half of the {@code freeBytes} free: {@code s}, with its
     * job's ranks ({@code group}), stays.
     */
    void noRoom(ConsumerSession s, List<ConsumerSession> group, int least, long slotBytes, long freeBytes) {
        refused(group);
        if (!toldNoRoom) {
            toldNoRoom = true;
            log.info(
                    "producer '{}' would move {} to a lane of its own (it holds the others back), but a lane's arena"
                            + " ({} slots of {} KiB, the fewest it serves from) would take more than half of the {} MiB"
                            + " of shared memory free; it sets the pace as without lanes, and is judged again in {} s."
                            + " More shared memory (docker run --shm-size, a larger /dev/shm) or smaller batches let it"
                            + " move",
                    producer,
                    s.describe(),
                    least,
                    slotBytes >> 10,
                    freeBytes >> 20,
                    TimeUnit.NANOSECONDS.toSeconds(LaneRule.WINDOW_NANOS));
        }
    }

    /**
     * The host has only {@code idleCores} idle, fewer than the {@code needed} a lane takes: {@code s}, with its job's ranks ({@code group}), stays.
     */
    void noCpu(ConsumerSession s, List<ConsumerSession> group, double idleCores, double needed) {
        refused(group);
        if (!toldNoCpu) {
            toldNoCpu = true;
            log.info(
                    "producer '{}' would move {} to a lane of its own (it holds the others back), but this host left"
                            + " {} cores idle over the last {} s, fewer than the {} a lane would spend loading its"
                            + " samples again (its pace times the CPU a sample costs the source, at least serve"
                            + " --lane-idle-cores or lane_idle_cores); it sets the pace as without lanes, which costs no"
                            + " CPU, and is judged again in {} s",
                    producer,
                    s.describe(),
                    String.format(Locale.ROOT, "%.2f", idleCores),
                    TimeUnit.NANOSECONDS.toSeconds(HostCpu.SPAN_NANOS),
                    String.format(Locale.ROOT, "%.1f", needed),
                    TimeUnit.NANOSECONDS.toSeconds(LaneRule.WINDOW_NANOS));
        }
    }

    /** {@code lane}'s arena could not be made ({@code e}): its founders, never moved, stay. */
    void notMade(Lane lane, Exception e) {
        refused(lane.members);
        if (!toldNotMade) {
            toldNotMade = true;
            log.warn(
                    "producer '{}' could not make the arena of lane {} ({}): {} keeps the main stream and sets the"
                            + " pace, as without lanes, and is judged again in {} s",
                    producer,
                    lane.number,
                    e.toString(),
                    lane.founder().describe(),
                    TimeUnit.NANOSECONDS.toSeconds(LaneRule.WINDOW_NANOS));
        }
    }

    private void refused(List<ConsumerSession> group) {
        long now = System.nanoTime();
        for (ConsumerSession r : group) {
            rule.refused(r, now);
        }
    }
}
