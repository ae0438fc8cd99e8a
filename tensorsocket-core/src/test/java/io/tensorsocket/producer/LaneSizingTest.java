package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A lane's arena within half of the free shared memory: all it wants, fewer down to its least, or none. */
class LaneSizingTest {
    /** 1 MiB batches. */
    private static final BatchLayout BATCH = new BatchLayout(List.of(TensorSpec.of("x", DType.UINT8, 1 << 14)), 64);

    private static final long SLOT = ArenaLayout.slotBytesFor(BATCH);

    /** Free bytes whose half holds exactly {@code slots} slots and the header. */
    private static long freeFor(int slots) {
        return 2 * ArenaLayout.of(BATCH, slots).fileBytes();
    }

    @Test
    void withRoomALaneGetsTheSlotsItWants() {
        assertEquals(16, LaneSizing.slots(BATCH, 3, 16, 1L << 40));
        assertEquals(16, LaneSizing.slots(BATCH, 3, 16, freeFor(16)));
    }

    @Test
    void shortOfRoomItGetsWhatFitsInHalfOfTheFreeSpaceDownToItsLeast() {
        assertEquals(15, LaneSizing.slots(BATCH, 3, 16, freeFor(16) - 1));
        assertEquals(5, LaneSizing.slots(BATCH, 3, 16, freeFor(5) + SLOT));
        assertEquals(3, LaneSizing.slots(BATCH, 3, 16, freeFor(3)));
    }

    @Test
    void whereNotEvenItsLeastFitsInThatHalfItGetsNone() {
        assertEquals(0, LaneSizing.slots(BATCH, 3, 16, freeFor(3) - 1));
        assertEquals(0, LaneSizing.slots(BATCH, 3, 16, ArenaLayout.of(BATCH, 3).fileBytes()), "all of it is not half");
        assertEquals(0, LaneSizing.slots(BATCH, 3, 16, 0));
    }
}
