package io.tensorsocket.pipeline;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native memory owned by one worker and reused from image to image. It is reallocated only when a
 * larger request arrives (growing by half again, so a folder of mixed sizes settles after a few images),
 * because a fresh native allocation costs far more than decoding a small image on this kind of machine.
 */
final class NativeBuffer implements AutoCloseable {
    private Arena arena;
    private MemorySegment segment = MemorySegment.NULL;

    /** A segment of at least {@code bytes} bytes; its contents are undefined after growth. */
    MemorySegment ensure(long bytes) {
        if (segment.byteSize() < bytes) {
            long capacity = Math.max(bytes, segment.byteSize() + segment.byteSize() / 2);
            // Shared, not confined: the source closes its workers' buffers from the thread that closes it.
            Arena next = Arena.ofShared();
            MemorySegment grown = next.allocate(capacity, 64);
            close();
            arena = next;
            segment = grown;
        }
        return segment;
    }

    long capacity() {
        return segment.byteSize();
    }

    @Override
    public void close() {
        if (arena != null) {
            arena.close();
            arena = null;
            segment = MemorySegment.NULL;
        }
    }
}
