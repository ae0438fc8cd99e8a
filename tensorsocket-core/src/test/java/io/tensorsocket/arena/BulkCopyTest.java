package io.tensorsocket.arena;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * {@link BulkCopy} keeps {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)}'s contract on
 * the path that calls the C library: the same bytes (every byte compared, offsets not multiples of any vector
 * width, overlapping either way) and the same exception for each misuse, checked side by side.
 */
class BulkCopyTest {
    private static final long BIG = BulkCopy.NATIVE_FROM * 3 + 12345;

    @Test
    void largeNativeCopiesGoToTheCLibraryOnLinux() {
        assertTrue(BulkCopy.usesCLibrary(), "memmove was not bound from the C library");
    }

    @Test
    void copiesTheSameBytesAsTheJdkAtEverySizeAndOffset() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = random(a, BIG + 64, 1);
            for (long bytes : new long[] {0, 1, 4095, BulkCopy.NATIVE_FROM - 1, BulkCopy.NATIVE_FROM, BIG}) {
                for (long srcOff : new long[] {0, 7}) {
                    for (long dstOff : new long[] {0, 33}) {
                        MemorySegment expected = random(a, BIG + 64, 2);
                        MemorySegment actual = a.allocate(BIG + 64);
                        actual.copyFrom(expected);
                        MemorySegment.copy(src, srcOff, expected, dstOff, bytes);
                        BulkCopy.copy(src, srcOff, actual, dstOff, bytes);
                        assertEquals(
                                -1,
                                expected.mismatch(actual),
                                "bytes " + bytes + " from offset " + srcOff + " to offset " + dstOff);
                    }
                }
            }
        }
    }

    @Test
    void overlappingCopiesInEitherDirectionAreCorrect() {
        try (Arena a = Arena.ofConfined()) {
            for (long shift : new long[] {1, 4096 + 3, BulkCopy.NATIVE_FROM / 2}) {
                MemorySegment expected = random(a, BIG + shift, 3);
                MemorySegment actual = a.allocate(expected.byteSize());
                actual.copyFrom(expected);
                MemorySegment.copy(expected, 0, expected, shift, BIG); // forwards: the target starts inside the source
                BulkCopy.copy(actual, 0, actual, shift, BIG);
                assertEquals(-1, expected.mismatch(actual), "forwards by " + shift);
                MemorySegment.copy(expected, shift, expected, 0, BIG); // backwards
                BulkCopy.copy(actual, shift, actual, 0, BIG);
                assertEquals(-1, expected.mismatch(actual), "backwards by " + shift);
            }
        }
    }

    @Test
    void heapSegmentsOnEitherSideAreCopied() {
        byte[] heap = new byte[(int) BIG];
        new SplittableRandom(4).nextBytes(heap);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment nat = a.allocate(BIG);
            BulkCopy.copy(MemorySegment.ofArray(heap), 0, nat, 0, BIG);
            byte[] back = new byte[(int) BIG];
            BulkCopy.copy(nat, 0, MemorySegment.ofArray(back), 0, BIG);
            assertArrayEquals(heap, back);
        }
    }

    @Test
    void eachMisuseThrowsWhatTheJdkCopyThrows() throws Exception {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = a.allocate(BIG);
            MemorySegment dst = a.allocate(BIG);
            sameFailure(
                    "a source range past its end",
                    () -> MemorySegment.copy(src, 1, dst, 0, BIG),
                    () -> BulkCopy.copy(src, 1, dst, 0, BIG));
            sameFailure(
                    "a target range past its end",
                    () -> MemorySegment.copy(src, 0, dst, 1, BIG),
                    () -> BulkCopy.copy(src, 0, dst, 1, BIG));
            sameFailure(
                    "a negative offset",
                    () -> MemorySegment.copy(src, -1, dst, 0, BulkCopy.NATIVE_FROM),
                    () -> BulkCopy.copy(src, -1, dst, 0, BulkCopy.NATIVE_FROM));
            sameFailure(
                    "a negative length",
                    () -> MemorySegment.copy(src, 0, dst, 0, -1),
                    () -> BulkCopy.copy(src, 0, dst, 0, -1));
            MemorySegment readOnly = dst.asReadOnly();
            sameFailure(
                    "a read-only target",
                    () -> MemorySegment.copy(src, 0, readOnly, 0, BIG),
                    () -> BulkCopy.copy(src, 0, readOnly, 0, BIG));
            sameFailure(
                    "a segment of another thread's arena",
                    () -> onAnotherThread(() -> MemorySegment.copy(src, 0, dst, 0, BIG)),
                    () -> onAnotherThread(() -> BulkCopy.copy(src, 0, dst, 0, BIG)));
        }
        MemorySegment closedSrc;
        MemorySegment liveDst = Arena.ofAuto().allocate(BIG);
        try (Arena gone = Arena.ofConfined()) {
            closedSrc = gone.allocate(BIG);
        }
        sameFailure(
                "a segment of a closed arena",
                () -> MemorySegment.copy(closedSrc, 0, liveDst, 0, BIG),
                () -> BulkCopy.copy(closedSrc, 0, liveDst, 0, BIG));
    }

    private static void onAnotherThread(Runnable copy) throws Throwable {
        try {
            CompletableFuture.runAsync(copy).get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause();
        }
    }

    private static void sameFailure(String what, Executable jdk, Executable bulk) {
        Throwable expected;
        try {
            jdk.execute();
            fail("the JDK's copy accepted " + what);
            return;
        } catch (Throwable t) {
            expected = t;
        }
        Throwable actual = assertThrows(Throwable.class, bulk, what);
        assertEquals(expected.getClass(), actual.getClass(), what + ": " + actual);
    }

    private static MemorySegment random(Arena a, long bytes, long seed) {
        byte[] b = new byte[(int) bytes];
        new SplittableRandom(seed).nextBytes(b);
        return a.allocate(bytes).copyFrom(MemorySegment.ofArray(b));
    }
}
