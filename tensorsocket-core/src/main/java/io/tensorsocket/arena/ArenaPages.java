package io.tensorsocket.arena;

import io.tensorsocket.TensorSocketException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Makes a producer's arena pages exist before it serves: allocated in the file system (so a file system out of room
 * fails here with {@link io.tensorsocket.SharedMemoryFullException}, never a write later with SIGBUS), backed by 2 MiB
 * pages where the arena asks for them, and written once (the first touch of a page is what costs: on some virtual
 * machines 2.5 ms per MB, 0.4 s for an arena of ten 19 MB batches). The arena is cut into as many 2 MiB-aligned parts
 * as the machine has processors, made side by side: at a producer's start they are otherwise idle, its source waiting
 * for the arena.
 */
final class ArenaPages {
    private ArenaPages() {}

    /**
     * Makes every page of the arena file {@code file} mapped as {@code segment}; returns whether they are 2 MiB pages.
     *
     * @param collapsing whether to back the arena with 2 MiB pages (the mapping is 2 MiB-aligned then)
     */
    static boolean make(Path file, MemorySegment segment, boolean collapsing) throws IOException {
        long bytes = segment.byteSize();
        int parts = (int) Math.max(
                1, Math.min(Runtime.getRuntime().availableProcessors(), bytes / (8 * HugePageMapping.HUGE_PAGE)));
        if (parts == 1) {
            return make(file, segment, collapsing, 0, bytes);
        }
        long step = ((bytes / parts) + HugePageMapping.HUGE_PAGE - 1) & -HugePageMapping.HUGE_PAGE;
        List<Future<Boolean>> made = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(
                parts,
                Thread.ofPlatform()
                        .daemon()
                        .name("tensorsocket-arena-pages-", 0)
                        .factory())) {
            for (long from = 0; from < bytes; from += step) {
                long start = from;
                long end = Math.min(bytes, from + step);
                made.add(pool.submit(() -> {
                    try {
                        return make(file, segment, collapsing, start, end);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }));
            }
            boolean huge = true;
            for (Future<Boolean> part : made) {
                huge &= part.get();
            }
            return huge;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TensorSocketException("interrupted while the arena's pages were made", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof UncheckedIOException io) {
                throw io.getCause();
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new TensorSocketException("making the arena's pages failed: " + cause, cause);
        }
    }

    private static boolean make(Path file, MemorySegment segment, boolean collapsing, long from, long to)
            throws IOException {
        boolean huge = false;
        if (collapsing) {
            // One 4 KiB page in each 2 MiB is all the collapse needs; it fills the rest with a 2 MiB page.
            SpaceReservation.allocate(file, from, to, true, HugePageMapping.HUGE_PAGE);
            huge = HugePageMapping.collapse(segment.asSlice(from, to - from));
        }
        SpaceReservation.allocate(file, from, to, false, 0);
        // Writing every page now moves the page-fault cost out of the first epoch.
        segment.asSlice(from, to - from).fill((byte) 0);
        return huge;
    }
}
