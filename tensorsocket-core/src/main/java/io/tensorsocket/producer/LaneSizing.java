package io.tensorsocket.producer;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.stream.StreamGeometry;

/**
 * How many slots a new lane's arena gets: as many as the lane wants, fewer down to the least it can serve with where
 * the wanted ones would take more than half of what the shared memory has free (the bound a default main arena keeps,
 * {@link ArenaSizing}), and none where not even the least fit in that half. A lane that gets none is not started: its
 * consumer keeps the main stream and sets the pace as without lanes, rather than a lane failing its consumer for want
 * of memory in a small {@code /dev/shm} (64 MB in a default Docker container).
 *
 * <p>A pure function.
 */
final class LaneSizing {
    private LaneSizing() {}

    /**
     * The fewest slots a lane serves a consumer from whose batches span {@code span} stream positions: those one of its
     * batches takes, and two more.
     */
    static int least(StreamGeometry geometry, int span) {
        return geometry.slotsNeeded(span) + 2;
    }

    /**
     * The slots of a lane's arena for batches shaped like {@code batch}: {@code wanted}, or fewer down to {@code least},
     * within half of {@code freeBytes}; 0 where not even {@code least} fit.
     */
    static int slots(BatchLayout batch, int least, int wanted, long freeBytes) {
        long fit = ArenaLayout.slotsThatFit(batch, freeBytes / 2);
        int slots = (int) Math.min(wanted, fit);
        return slots >= least ? slots : 0;
    }
}
