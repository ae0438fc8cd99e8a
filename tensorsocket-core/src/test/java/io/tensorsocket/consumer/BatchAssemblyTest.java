package io.tensorsocket.consumer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.*;
import io.tensorsocket.stream.ConsumerStream.BatchPlan;
import io.tensorsocket.stream.ConsumerStream.Piece;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Plans become batches over slot memory laid out in the test: one piece is a view of the slot (no copy, the
 * same address), several are gathered in order; every batch reads the samples its plan names, its lease ends
 * its views, and the gather hook runs only before a gather.
 */
class BatchAssemblyTest {
    private static final int SLOT_SAMPLES = 4;
    private static final List<TensorSpec> SPECS =
            List.of(TensorSpec.of("x", DType.INT32, 2), TensorSpec.of("y", DType.INT64));
    private final Arena memory = Arena.ofConfined();
    /** slots[s][t]: slot s's region for tensor t; x of sample i of slot s is (100 s + i, -(100 s + i)), y is 100 s + i. */
    private final MemorySegment[][] slots = new MemorySegment[3][2];

    private final AtomicInteger gathers = new AtomicInteger();

    BatchAssemblyTest() {
        for (int s = 0; s < slots.length; s++) {
            slots[s][0] = memory.allocate(SLOT_SAMPLES * 8L);
            slots[s][1] = memory.allocate(SLOT_SAMPLES * 8L);
            for (int i = 0; i < SLOT_SAMPLES; i++) {
                slots[s][0].setAtIndex(ValueLayout.JAVA_INT, 2L * i, 100 * s + i);
                slots[s][0].setAtIndex(ValueLayout.JAVA_INT, 2L * i + 1, -(100 * s + i));
                slots[s][1].setAtIndex(ValueLayout.JAVA_LONG, i, 100 * s + i);
            }
        }
    }

    @AfterEach
    void free() {
        memory.close();
    }

    private static void assertSamples(Batch b, int... ids) {
        assertEquals(ids.length, b.size());
        assertArrayEquals(new long[] {ids.length, 2}, b.tensor("x").shape());
        for (int i = 0; i < ids.length; i++) {
            assertEquals(ids[i], b.tensor("x").getInt(2L * i));
            assertEquals(-ids[i], b.tensor("x").getInt(2L * i + 1));
            assertEquals(ids[i], b.tensor("y").getLong(i));
        }
    }

    @Test
    void aPlanInsideOneSlotIsAViewOfIt() {
        try (BatchAssembly a = new BatchAssembly(SPECS, 3, (s, t) -> slots[s][t], false)) {
            Batch b = a.assemble(
                    new BatchPlan(0, 0, 1, 3, List.of(new Piece(2, 2, 1, 3, 0))), gathers::incrementAndGet, null);
            assertSamples(b, 201, 202, 203);
            assertEquals(slots[2][1].address() + 8, b.tensor("y").data().address(), "a view, not a copy");
            assertEquals(0, gathers.get());
            assertTrue(b.tensor("y").data().isReadOnly());
            b.close();
            assertThrows(BatchReleasedException.class, () -> b.tensor("y").getLong(0));
        }
    }

    @Test
    void aPlanAcrossSlotsIsGatheredInOrderAndTheHookRunsFirst() {
        try (BatchAssembly a = new BatchAssembly(SPECS, 6, (s, t) -> slots[s][t], false)) {
            AtomicInteger closed = new AtomicInteger();
            Batch b = a.assemble(
                    new BatchPlan(
                            1,
                            2,
                            3,
                            6,
                            List.of(new Piece(0, 0, 3, 1, 0), new Piece(1, 1, 0, 4, 1), new Piece(2, 2, 0, 1, 5))),
                    gathers::incrementAndGet,
                    closed::incrementAndGet);
            assertSamples(b, 3, 100, 101, 102, 103, 200);
            assertEquals(1, gathers.get());
            assertEquals(1, b.epoch());
            assertEquals(2, b.index());
            assertEquals(3, b.sampleStart());
            b.close();
            b.close();
            assertEquals(1, closed.get(), "released once");
            // The gather buffer is reused for the next gathered batch.
            Batch c = a.assemble(
                    new BatchPlan(1, 3, 9, 2, List.of(new Piece(2, 2, 3, 1, 0), new Piece(0, 0, 0, 1, 1))),
                    gathers::incrementAndGet,
                    null);
            assertSamples(c, 203, 0);
            assertEquals(2, gathers.get());
        }
    }
}
