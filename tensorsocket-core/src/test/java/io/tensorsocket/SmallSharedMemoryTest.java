package io.tensorsocket;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tensorsocket.arena.SpaceReservation;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A producer on a file system as small as a container's {@code /dev/shm}: a real 16 MiB tmpfs, mounted for
 * this test (skipped, saying why, where mounting is not permitted).
 */
@Timeout(60)
class SmallSharedMemoryTest {
    static final long TMPFS_BYTES = 16L << 20;
    static Path mount;
    static String skipReason;

    @BeforeAll
    static void mountTmpfs() throws Exception {
        mount = Files.createTempDirectory("tensorsocket-small-shm-");
        skipReason = SmallTmpfs.mount(mount, TMPFS_BYTES);
        if (skipReason != null) {
            System.out.println("SmallSharedMemoryTest skipped: " + skipReason);
        }
    }

    @AfterAll
    static void unmount() throws Exception {
        if (skipReason == null) {
            SmallTmpfs.unmount(mount);
        }
        Files.deleteIfExists(mount);
    }

    private static Path dir(String name) {
        assumeTrue(skipReason == null, skipReason);
        return mount.resolve("base").resolve(name);
    }

    private static SyntheticSource source(String shape, int batch) {
        return new SyntheticSource(SyntheticSpec.parse("samples=640,shape=" + shape + ",dtype=float32,seed=3"), batch);
    }

    private static List<Path> leftovers() throws IOException {
        try (Stream<Path> s = Files.walk(mount)) {
            return s.filter(p -> !p.equals(mount) && !p.equals(mount.resolve("base")))
                    .toList();
        }
    }

    @Test
    void anArenaLargerThanTheFileSystemIsAClearErrorAndLeavesNothing() throws Exception {
        Path dir = dir("explicit");
        SharedMemoryFullException e = assertThrows(
                SharedMemoryFullException.class,
                () -> TensorProducer.builder()
                        .directory(dir)
                        .source(source("3x32x32", 64))
                        .arenaMiB(64)
                        .build());
        String m = e.getMessage();
        assertFalse(m.contains("\n"), m);
        assertTrue(m.startsWith("not enough shared memory in " + dir + ": the arena needs "), m);
        assertTrue(e.bytesNeeded() > 60L << 20 && e.bytesFree() <= TMPFS_BYTES, m);
        assertTrue(m.contains(e.bytesNeeded() + " bytes") && m.contains("only " + e.bytesFree() + " bytes"), m);
        for (String remedy : List.of(
                "--arena-mb",
                "--slots",
                "smaller loader batch",
                "--shm-size",
                "--ipc=host",
                "emptyDir",
                "medium: Memory",
                "sizeLimit",
                "TENSORSOCKET_BASE")) {
            assertTrue(m.contains(remedy), "no '" + remedy + "' in: " + m);
        }
        assertEquals(List.of(), leftovers(), "arena, lock and directory are removed");
        assertTrue(SpaceReservationProbe.free(mount) > TMPFS_BYTES - (1 << 20), "the space is given back");
    }

    @Test
    void theDefaultArenaFitsAndServesEveryByte() throws Exception {
        Path dir = dir("fits");
        SyntheticSpec spec = SyntheticSpec.parse("samples=640,shape=3x32x32,dtype=float32,seed=3");
        // The default for 772 KiB batches is 64 slots (48 MiB), three times this file system.
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir)
                        .source(new SyntheticSource(spec, 64))
                        .drainTimeout(Duration.ofSeconds(5))
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(64));
                SyntheticVerifier v = new SyntheticVerifier(spec)) {
            long arena = Files.size(dir.resolve(ProducerDirectory.ARENA_FILE));
            assertTrue(arena <= TMPFS_BYTES / 2, "arena of " + arena + " bytes takes at most half of the tmpfs");
            long n = 0;
            for (Batch b : c) {
                v.accept(b, c.streamPosition(b));
                n++;
            }
            assertEquals(10, n);
            SyntheticVerifier.EpochCounts counts = v.finishEpoch();
            assertTrue(counts.exact(640) && counts.intact(), counts.toString());
            c.close();
            assertTrue(p.await(Duration.ofSeconds(30)));
        }
        assertEquals(List.of(), leftovers());
    }

    @Test
    void anArenaThatLeavesNoRoomForTheRingsServesOverSockets() throws Exception {
        Path dir = dir("norings");
        SyntheticSpec spec = SyntheticSpec.parse("samples=640,shape=4,dtype=float32,seed=3");
        // 4 KiB slots filling all but two pages: the rings (16 × over 100 KiB for that many slots) do not fit.
        int slots = (int) ((SpaceReservationProbe.free(mount) - 4 * 4096) / 4096);
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir)
                        .source(new SyntheticSource(spec, 64))
                        .slots(slots)
                        .drainTimeout(Duration.ofSeconds(5))
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(64));
                SyntheticVerifier v = new SyntheticVerifier(spec)) {
            assertFalse(Files.exists(dir.resolve(ProducerDirectory.RINGS_FILE)));
            assertFalse(c.ringHandoff(), "no rings: this consumer is served over its socket");
            for (Batch b : c) {
                v.accept(b, c.streamPosition(b));
            }
            SyntheticVerifier.EpochCounts counts = v.finishEpoch();
            assertTrue(counts.exact(640) && counts.intact(), counts.toString());
        }
        assertEquals(List.of(), leftovers());
    }

    @Test
    void batchesTooLargeForTheMinimumGiveTheSameError() throws Exception {
        Path dir = dir("huge");
        // 12 MiB batches: even the 5 slots the contract needs are 60 MiB.
        SharedMemoryFullException e = assertThrows(
                SharedMemoryFullException.class,
                () -> TensorProducer.builder()
                        .directory(dir)
                        .source(source("3x64x64", 256))
                        .build());
        assertTrue(e.getMessage().contains("not enough shared memory in " + dir), e.getMessage());
        assertEquals(List.of(), leftovers());
    }

    @Test
    void reservingTakesTheSpaceBeforeAnyPageIsTouched() throws Exception {
        Path dir = Files.createDirectories(dir("reserve"));
        Path file = Files.createFile(dir.resolve("arena"));
        long before = SpaceReservationProbe.free(mount);
        SpaceReservation.reserve(file, 8L << 20);
        assertEquals(8L << 20, Files.size(file));
        assertTrue(before - SpaceReservationProbe.free(mount) >= 8L << 20, "the blocks are allocated, not sparse");
        Path second = Files.createFile(dir.resolve("second"));
        assertThrows(SharedMemoryFullException.class, () -> SpaceReservation.reserve(second, 9L << 20));
        Files.delete(file);
        Files.delete(second);
        Files.delete(dir);
    }

    /** Free space as the producer measures it. */
    static final class SpaceReservationProbe {
        static long free(Path p) throws IOException {
            return SpaceReservation.usableBytes(p);
        }
    }

    /** Mounts and unmounts a size-limited tmpfs with mount(8). */
    static final class SmallTmpfs {
        /** Returns null when mounted, else why not. */
        static String mount(Path dir, long bytes) throws Exception {
            if (!System.getProperty("os.name").startsWith("Linux")) {
                return "tmpfs needs Linux";
            }
            Process p = new ProcessBuilder(
                            "mount", "-t", "tmpfs", "-o", "size=" + bytes + ",mode=0700", "tmpfs", dir.toString())
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), UTF_8);
            if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
                return "cannot mount a tmpfs here (" + out.strip() + ")";
            }
            return null;
        }

        static void unmount(Path dir) throws Exception {
            Process p = new ProcessBuilder("umount", dir.toString()).inheritIO().start();
            p.waitFor(20, TimeUnit.SECONDS);
        }
    }
}
