package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Arena sizing as a function of the batch, the user's choice, the rubber band and claims, and the free space. */
class ArenaSizingTest {
    private static final long GIB = 1L << 30;
    /** 1 MiB batches: 64 MiB buys 64 of them, so the default is 64 slots. */
    private static final BatchLayout MIB_BATCH = new BatchLayout(List.of(TensorSpec.of("x", DType.UINT8, 1 << 14)), 64);
    /** 16 MiB batches: the default is rubber band + claims + 4, at least 8. */
    private static final BatchLayout BIG_BATCH =
            new BatchLayout(List.of(TensorSpec.of("x", DType.FLOAT32, 1 << 20)), 4);

    @Test
    void anExplicitCountOrSizeIsTakenAsItIs() {
        ArenaSizing.Choice c = ArenaSizing.choose(MIB_BATCH, 12, 0, 2, 2, 0);
        assertEquals(new ArenaSizing.Choice(12, 2, null), c);
        long slot = ArenaLayout.slotBytesFor(MIB_BATCH);
        assertEquals(
                10,
                ArenaSizing.choose(MIB_BATCH, 0, ArenaLayout.HEADER_BYTES + 10 * slot, 2, 2, 0)
                        .slots());
    }

    @Test
    void theDefaultIsCheapForSmallBatchesAndAFewForBigOnes() {
        ArenaSizing.Choice small = ArenaSizing.choose(MIB_BATCH, 0, 0, 2, 2, 64 * GIB);
        assertEquals(64, small.slots());
        assertTrue(small.reason().contains("the default for"), small.reason());
        assertEquals(8, ArenaSizing.choose(BIG_BATCH, 0, 0, 2, 2, 64 * GIB).slots());
        assertEquals(11, ArenaSizing.choose(BIG_BATCH, 0, 0, 4, 3, 64 * GIB).slots(), "rubber band + claims + 4");
    }

    @Test
    void theDefaultTakesAtMostHalfTheFreeSpaceButNeverTooFewSlots() {
        long slot = ArenaLayout.slotBytesFor(BIG_BATCH);
        ArenaSizing.Choice c = ArenaSizing.choose(BIG_BATCH, 0, 0, 2, 2, 2 * (ArenaLayout.HEADER_BYTES + 6 * slot));
        assertEquals(new ArenaSizing.Choice(6, 2, c.reason()), c);
        assertTrue(c.reason().contains("more than half of the free space"), c.reason());
        assertEquals(
                new ArenaSizing.Choice(4, 1, null),
                ArenaSizing.choose(BIG_BATCH, 0, 0, 2, 2, 1),
                "the minimum, with nothing to log; the reservation reports the rest");
    }

    @Test
    void whereSpaceIsShortClaimsAheadShrinkBeforeTheArenaIsRefused() {
        // 10 MB batches in a 64 MiB /dev/shm, fed by a feeder (4 claims ahead): 7 slots do not fit, 4 do
        BatchLayout tenMb = new BatchLayout(List.of(TensorSpec.of("x", DType.FLOAT32, 3 * 224 * 224)), 16);
        long slot = ArenaLayout.slotBytesFor(tenMb);
        ArenaSizing.Choice c = ArenaSizing.choose(tenMb, 0, 0, 2, 4, 64L << 20);
        assertEquals(4, c.slots(), c.toString());
        assertEquals(1, c.claimsAhead(), c.toString());
        assertTrue(ArenaLayout.HEADER_BYTES + c.slots() * slot <= 64L << 20);
        assertTrue(
                c.reason().contains("claims ahead lowered from 4 to 1 so that 4 slots hold the rubber band (2)")
                        && c.reason().contains("(the fewest this producer serves from)"),
                c.reason());
        // within half of the free space where that holds the rubber band and at least one claim
        ArenaSizing.Choice half = ArenaSizing.choose(tenMb, 0, 0, 2, 4, 2 * (ArenaLayout.HEADER_BYTES + 5 * slot));
        assertEquals(new ArenaSizing.Choice(5, 2, half.reason()), half);
        assertFalse(half.reason().contains("fewest"), half.reason());
        // an explicit count below rubber band + claims ahead + 1 lowers the claims too
        ArenaSizing.Choice explicit = ArenaSizing.choose(tenMb, 4, 0, 2, 4, 64 * GIB);
        assertEquals(new ArenaSizing.Choice(4, 1, explicit.reason()), explicit);
        assertTrue(explicit.reason().startsWith("claims ahead lowered from 4 to 1"), explicit.reason());
    }

    @Test
    void tooFewSlotsAreRefusedWithTheSizeThatWouldDo() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ArenaSizing.choose(BIG_BATCH, 3, 0, 2, 2, 64 * GIB));
        assertTrue(
                e.getMessage().contains("needs at least 4 (rubber band 2 + 1 claim ahead + 1)")
                        && e.getMessage().contains("give it at least 65 MiB"),
                e.getMessage());
    }
}
