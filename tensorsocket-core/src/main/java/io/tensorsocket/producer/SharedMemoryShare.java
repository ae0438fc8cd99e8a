package io.tensorsocket.producer;

import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the arena and its source's own processes fit in the shared memory they share: a PyTorch feeder's DataLoader
 * workers hand their batches over in {@code /dev/shm} too, and a worker that finds no room dies of a bus error. The
 * arena's default size leaves them their share ({@code BatchSource.sharedMemoryReserve}); where even so both do not
 * fit, the producer says so before it starts, with what to do.
 */
final class SharedMemoryShare {
    private static final Logger log = LoggerFactory.getLogger(SharedMemoryShare.class);

    private SharedMemoryShare() {}

    /** The words said where an arena of {@code arenaBytes} and {@code reserve} do not fit in {@code free}; else null. */
    static String shortOf(Path at, long free, long reserve, long arenaBytes) {
        if (reserve <= 0 || arenaBytes + reserve <= free) {
            return null;
        }
        return "the arena (" + (arenaBytes >> 20) + " MiB) and the loader's workers' batches (" + (reserve >> 20)
                + " MiB: workers x prefetch x batch) do not both fit in the " + (free >> 20) + " MiB free in " + at
                + "; a worker that finds no room dies of a bus error. Give the container more shared memory (docker run"
                + " --shm-size=1g), the loader fewer workers or a smaller prefetch_factor, or the producer a smaller"
                + " arena (arena_mb)";
    }

    /** Logs {@link #shortOf}'s words for producer {@code name}, where there are any. */
    static void warnIfShort(String name, Path at, long free, long reserve, long arenaBytes) {
        String why = shortOf(at, free, reserve, arenaBytes);
        if (why != null) {
            log.warn("producer '{}': {}", name, why);
        }
    }
}
