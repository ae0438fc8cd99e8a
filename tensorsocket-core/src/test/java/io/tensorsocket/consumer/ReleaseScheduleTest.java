package io.tensorsocket.consumer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.*;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The release rule on real leases: a batch not waited for is released (scope closed) when the next is asked
 * for; one that was waited for is retired: its typed accessors refuse at once, its raw views stay readable
 * until {@code closeRetired}, and its release callback runs once either way.
 */
class ReleaseScheduleTest {
    private final Arena memory = Arena.ofShared();
    private final AtomicInteger released = new AtomicInteger();

    private Batch batch() {
        MemorySegment data = memory.allocate(8);
        data.set(ValueLayout.JAVA_LONG, 0, 42);
        return Batch.lent(
                List.of(TensorSpec.of("v", DType.INT64)),
                List.of(data),
                1,
                0,
                0,
                0,
                "the batch",
                released::incrementAndGet);
    }

    @Test
    void aBatchNotWaitedForIsReleasedAtOnceAndMayGiveBackAtOnce() {
        ReleaseSchedule s = new ReleaseSchedule();
        Batch b = batch();
        assertTrue(s.handOut(b), "not waited for: what it was made of goes back now");
        MemorySegment view = b.tensor("v").data();
        s.releaseCurrent();
        assertTrue(b.isReleased());
        assertFalse(s.hasRetired());
        assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_LONG, 0), "scope closed");
        assertEquals(1, released.get());
    }

    @Test
    void aBatchWaitedForIsRetiredUntilTheNextCall() {
        ReleaseSchedule s = new ReleaseSchedule();
        Batch b = batch();
        s.waited();
        assertFalse(s.handOut(b), "waited for: nothing more is written before it is handed out");
        s.waited(); // the consumer waits again, for the batch after b, while it holds b
        MemorySegment view = b.tensor("v").data();
        s.releaseCurrent();
        assertTrue(b.isReleased());
        assertThrows(BatchReleasedException.class, () -> b.tensor("v").getLong(0));
        assertTrue(s.hasRetired());
        assertEquals(42, view.get(ValueLayout.JAVA_LONG, 0), "its scope is still open");
        s.closeRetired();
        assertFalse(s.hasRetired());
        assertThrows(IllegalStateException.class, () -> view.get(ValueLayout.JAVA_LONG, 0));
        assertEquals(1, released.get(), "b's callback ran once");
    }

    @Test
    void closeAllReleasesTheCurrentAndTheRetired() {
        ReleaseSchedule s = new ReleaseSchedule();
        Batch first = batch();
        s.handOut(first);
        s.waited();
        s.releaseCurrent(); // first retired
        Batch second = batch();
        s.handOut(second);
        s.closeAll();
        assertTrue(first.isReleased() && second.isReleased());
        assertFalse(s.hasRetired());
    }
}
