package io.tensorsocket.flight;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.netty.NettyAllocationManager;

/**
 * An Arrow allocation manager that keeps the memory of large buffers for the next buffer of the same
 * size instead of giving it back to the operating system.
 *
 * <p>Flight reads each received message into one buffer the size of its body: tens of MB for a batch of
 * images. Netty pools only small chunks, so every such buffer is fresh memory, and on a virtual machine
 * the first touch of fresh memory costs more than the copy into it (about 100 ms for 38 MB, which caps a
 * stream at a few batches per second). Messages of one stream have one of very few sizes (a full batch,
 * the short last batch of an epoch), so a few kept blocks serve the whole stream from memory that is
 * already mapped. What is kept while unused is bounded; a stream that needs more blocks at once than
 * the bound allocates (and frees) the rest, as without recycling. Buffers below {@link #LARGE} go to Arrow's Netty manager, which pools them.
 *
 * <p>Kept blocks are freed when the allocator's owner calls {@link #close()}; blocks still lent then are
 * freed when they come back.
 */
final class RecyclingAllocations implements AllocationManager.Factory, AutoCloseable {
    /** Buffers of at least this many bytes are recycled. */
    static final long LARGE = 1 << 20;
    /** What a stream's end keeps idle: a few batches of 64 images of 3x224x224 float32. */
    static final long KEEP_BYTES = 256L << 20;
    /** Blocks are sized in steps of this many bytes, so nearby sizes share blocks. */
    private static final long STEP = 1 << 20;

    private final AllocationManager.Factory small = NettyAllocationManager.FACTORY;
    private final long maxIdleBytes;
    private final Map<Long, ArrayDeque<Block>> idle = new HashMap<>();
    private long idleBytes;
    private boolean closed;
    private boolean keepAll;

    /** @param maxIdleBytes how much memory to keep while no buffer uses it; blocks beyond are freed */
    RecyclingAllocations(long maxIdleBytes) {
        this.maxIdleBytes = maxIdleBytes;
    }

    /** A root allocator whose large buffers are recycled by {@code recycling}. */
    static RootAllocator rootAllocator(RecyclingAllocations recycling) {
        return new RootAllocator(RootAllocator.configBuilder()
                .allocationManagerFactory(recycling)
                .build());
    }

    @Override
    public AllocationManager create(BufferAllocator accountingAllocator, long size) {
        if (size < LARGE) {
            return small.create(accountingAllocator, size);
        }
        return new Lent(accountingAllocator, size, take(roundUp(size)));
    }

    @Override
    public ArrowBuf empty() {
        return small.empty();
    }

    /** Blocks kept idle now, for tests. */
    synchronized int idleBlocks() {
        return idle.values().stream().mapToInt(ArrayDeque::size).sum();
    }

    private static long roundUp(long size) {
        return (size + STEP - 1) / STEP * STEP;
    }

    private synchronized Block take(long capacity) {
        ArrayDeque<Block> q = idle.get(capacity);
        Block b = q == null ? null : q.pollFirst();
        if (b == null) {
            return Block.allocate(capacity);
        }
        idleBytes -= capacity;
        return b;
    }

    /**
     * Frees no block from now on, not even on {@link #close()}: views of a thread-confined batch released from another
     * thread stay open on their block until the process ends (they may show later batches' bytes, but never freed
     * memory).
     */
    synchronized void keepAll() {
        keepAll = true;
    }

    private synchronized void giveBack(Block b) {
        long capacity = b.segment.byteSize();
        if (closed && !keepAll) {
            b.free();
            return;
        }
        if (keepAll || idleBytes + capacity <= maxIdleBytes) {
            // the most recently used block is the one most likely still in cache
            idle.computeIfAbsent(capacity, k -> new ArrayDeque<>()).addFirst(b);
            idleBytes += capacity;
        } else {
            b.free();
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (keepAll) {
            return;
        }
        idle.values().forEach(q -> q.forEach(Block::free));
        idle.clear();
        idleBytes = 0;
    }

    /** Native memory of one arena, which only its owner closes (closing a shared arena is costly, so rare). */
    private record Block(Arena arena, MemorySegment segment) {
        static Block allocate(long capacity) {
            Arena a = Arena.ofShared();
            return new Block(a, a.allocate(capacity, 64)); // zero-filled: touched once, here
        }

        void free() {
            arena.close();
        }
    }

    private final class Lent extends AllocationManager {
        private final long size;
        private final Block block;

        Lent(BufferAllocator accountingAllocator, long size, Block block) {
            super(accountingAllocator);
            this.size = size;
            this.block = block;
        }

        @Override
        public long getSize() {
            return size;
        }

        @Override
        protected long memoryAddress() {
            return block.segment.address();
        }

        @Override
        protected void release0() {
            giveBack(block);
        }
    }
}
