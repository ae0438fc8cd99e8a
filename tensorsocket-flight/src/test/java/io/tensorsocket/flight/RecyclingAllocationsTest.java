package io.tensorsocket.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.junit.jupiter.api.Test;

class RecyclingAllocationsTest {
    private static final long BATCH = 38_535_168; // 64 x 3 x 224 x 224 float32

    @Test
    void aFreedLargeBufferServesTheNextOneOfItsSize() {
        try (RecyclingAllocations r = new RecyclingAllocations(256L << 20);
                BufferAllocator a = RecyclingAllocations.rootAllocator(r)) {
            long first;
            try (ArrowBuf b = a.buffer(BATCH)) {
                first = b.memoryAddress();
                b.setLong(BATCH - 8, 42);
            }
            assertEquals(1, r.idleBlocks());
            try (ArrowBuf again = a.buffer(BATCH - 1000)) { // the short last batch of an epoch shares the block
                assertEquals(first, again.memoryAddress());
                assertEquals(0, r.idleBlocks());
            }
            try (ArrowBuf bigger = a.buffer(2 * BATCH)) {
                assertNotEquals(first, bigger.memoryAddress());
            }
            assertEquals(0, a.getAllocatedMemory());
        }
    }

    @Test
    void idleMemoryIsBoundedAndFreedAtClose() {
        RecyclingAllocations r = new RecyclingAllocations(3L << 20);
        try (BufferAllocator a = RecyclingAllocations.rootAllocator(r)) {
            ArrowBuf b1 = a.buffer(1 << 20);
            ArrowBuf b2 = a.buffer(1 << 20);
            ArrowBuf b3 = a.buffer(2 << 20);
            b1.close();
            b2.close();
            b3.close(); // 1 + 1 MiB kept, the 2 MiB block would pass the bound
            assertEquals(2, r.idleBlocks());
            ArrowBuf lent = a.buffer(1 << 20);
            r.close();
            assertEquals(0, r.idleBlocks());
            lent.close(); // freed on return: the pool is closed
            assertEquals(0, r.idleBlocks());
        }
    }

    @Test
    void smallBuffersAreNotKept() {
        try (RecyclingAllocations r = new RecyclingAllocations(256L << 20);
                BufferAllocator a = RecyclingAllocations.rootAllocator(r)) {
            a.buffer(48).close();
            a.buffer(RecyclingAllocations.LARGE / 2 - 1).close(); // Arrow rounds sizes up to a power of two
            assertEquals(0, r.idleBlocks());
        }
    }
}
