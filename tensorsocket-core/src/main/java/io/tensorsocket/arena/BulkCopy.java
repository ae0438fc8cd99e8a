package io.tensorsocket.arena;

import java.lang.foreign.MemorySegment;

/**
 * Copies whole batches: {@link #copy} has the contract of {@link MemorySegment#copy(MemorySegment, long,
 * MemorySegment, long, long)} (bounds, liveness, owning thread, read-only target, overlap) and, where the C library
 * writes large copies past the cache, copies a batch larger than the cache faster, such as a batch written into a
 * slot that another process will read.
 *
 * <p>A copy of at least {@link #NATIVE_FROM} bytes between native segments is done by the C library's
 * {@code memmove}, whose large-copy strategy is tuned per processor: above its non-temporal threshold (glibc:
 * {@code glibc.cpu.x86_non_temporal_threshold}, derived from the cache size it reads from the processor) it writes
 * with non-temporal stores, which bypass the cache and need not read the target's lines first. A batch larger than
 * the cache is evicted before anyone reads it, so those stores lose nothing; the JDK's copy never uses them (what
 * that is worth is measured in docs/benchmarks.md, "Copying past the cache"). Smaller copies and copies from or to
 * the heap are {@code MemorySegment.copy}.
 */
public final class BulkCopy {
    /** Copies from this many bytes on go to the C library (below it the call's overhead is not worth it). */
    public static final long NATIVE_FROM = 1L << 20;

    private BulkCopy() {}

    /** Whether large native copies go to the C library's {@code memmove} on this platform. */
    public static boolean usesCLibrary() {
        return Libc.MEMMOVE != null;
    }

    /**
     * Copies {@code bytes} bytes from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset}, as
     * {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)} does, with the same exceptions.
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        if (bytes < NATIVE_FROM || Libc.MEMMOVE == null || !src.isNative() || !dst.isNative()) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
            return;
        }
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("cannot copy into a read-only segment");
        }
        // the slices check bounds; the call checks that both are alive and may be used by this thread
        MemorySegment from = src.asSlice(srcOffset, bytes);
        MemorySegment to = dst.asSlice(dstOffset, bytes);
        try {
            MemorySegment ignored = (MemorySegment) Libc.MEMMOVE.invokeExact(to, from, bytes);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("memmove failed", t);
        }
    }
}
