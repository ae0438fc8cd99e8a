package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Docker's default 64 MiB of /dev/shm, a loader of 12 MiB batches with two workers prefetching two each: the arena's
 * default leaves the workers their 48 MiB where it can, and where arena and workers cannot both fit the producer says
 * so before it starts, with what to do.
 */
class SharedMemoryShareTest {
    private static final BatchLayout BATCH = new BatchLayout(
            List.of(TensorSpec.of("image", DType.UINT8, 3, 256, 256), TensorSpec.of("label", DType.INT64)), 64);
    private static final long FREE = (long) (63.9 * (1 << 20));

    @Test
    void theDefaultArenaLeavesTheWorkersTheirShareAndSaysWhereBothCannotFit() {
        long batch = 64L * 3 * 256 * 256;
        long reserve = 2 * 2 * batch; // workers x prefetch x batch
        ArenaSizing.Choice c = ArenaSizing.choose(BATCH, 0, 0, 2, 4, Math.max(0, FREE - reserve));
        long arena = ArenaLayout.of(BATCH, c.slots()).fileBytes();
        String why = SharedMemoryShare.shortOf(Path.of("/dev/shm/tensorsocket-u/t"), FREE, reserve, arena);
        assertNotNull(why, "four 12 MiB slots and 48 MiB of workers' batches do not fit in 63.9 MiB");
        assertTrue(why.contains("(48 MiB: workers x prefetch x batch) do not both fit in the 63 MiB free"), why);
        assertTrue(why.contains("--shm-size"), why);
        assertNull(
                SharedMemoryShare.shortOf(Path.of("/dev/shm"), 1L << 30, reserve, arena),
                "a 1 GiB /dev/shm holds both");
        assertNull(SharedMemoryShare.shortOf(Path.of("/dev/shm"), FREE, 0, arena), "a loader without workers");
        long roomy = 1L << 30;
        ArenaSizing.Choice left = ArenaSizing.choose(BATCH, 0, 0, 2, 4, roomy - reserve);
        assertTrue(ArenaLayout.of(BATCH, left.slots()).fileBytes() + reserve <= roomy, "the default leaves the share");
    }
}
