package io.tensorsocket.arena;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Arenas backed by 2 MiB pages: what the kernel reports of the producer's and a consumer's mappings in
 * {@code /proc/self/smaps}, the same bytes through every kind of mapping, and nothing left mapped after close.
 */
class HugePageMappingTest {
    /** Three slots of 64 × 3×100×100 float32 (7.3 MiB each): whole 2 MiB pages and a tail of small ones. */
    private static final ArenaLayout LAYOUT = ArenaLayout.of(
            new BatchLayout(
                    List.of(
                            new TensorSpec("x", DType.FLOAT32, new long[] {3, 100, 100}),
                            TensorSpec.of("y", DType.INT64)),
                    64),
            3);

    private static final long WHOLE_HUGE_KB = LAYOUT.fileBytes() / HugePageMapping.HUGE_PAGE * 2048;

    private Path dir;
    private Path file;

    @BeforeEach
    void setUp() throws IOException {
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "tensorsocket-huge-");
        file = dir.resolve("arena");
    }

    @AfterEach
    void tearDown() throws IOException {
        Files.deleteIfExists(file);
        Files.deleteIfExists(dir);
    }

    @Test
    void aProducersArenaAndAConsumersMappingUseWholeTwoMiBPages() throws IOException {
        assumeCollapsible();
        try (SharedArena producer = SharedArena.create(file, LAYOUT, 5, 1, true);
                SharedArena consumer = SharedArena.openReadOnly(file, LAYOUT, 5, true)) {
            assertTrue(producer.hugePages(), "the producer's arena was not collapsed into 2 MiB pages");
            assertEquals(0, producer.segment().address() % HugePageMapping.HUGE_PAGE);
            assertEquals(0, consumer.segment().address() % HugePageMapping.HUGE_PAGE);
            assertEquals(WHOLE_HUGE_KB, pmdMappedKb(producer.segment()), "the producer's mapping");
            assertEquals(WHOLE_HUGE_KB, pmdMappedKb(consumer.segment()), "the consumer's mapping");
        }
    }

    @Test
    void withoutHugePagesTheArenaKeepsSmallPages() throws IOException {
        try (SharedArena producer = SharedArena.create(file, LAYOUT, 5, 1, false);
                SharedArena consumer = SharedArena.openReadOnly(file, LAYOUT, 5, false)) {
            assertFalse(producer.hugePages());
            assertEquals(0, pmdMappedKb(producer.segment()));
            assertEquals(0, pmdMappedKb(consumer.segment()));
        }
    }

    @Test
    void byDefaultTheArenaIsInTwoMiBPagesMappedAligned() throws IOException {
        assumeTrue(System.getenv("TENSORSOCKET_HUGE_PAGES") == null, "TENSORSOCKET_HUGE_PAGES is set here");
        assumeTrue(HugePageMapping.available(), "no C library with mmap and madvise here");
        assertTrue(HugePageMapping.requested(), "2 MiB pages unless TENSORSOCKET_HUGE_PAGES=0");
        try (SharedArena producer = SharedArena.create(file, LAYOUT, 5, 1);
                SharedArena consumer = SharedArena.openReadOnly(file, LAYOUT, 5)) {
            assertEquals(0, producer.segment().address() % HugePageMapping.HUGE_PAGE);
            assertEquals(0, consumer.segment().address() % HugePageMapping.HUGE_PAGE);
            assumeTrue(producer.hugePages(), "this kernel keeps 4 KiB pages here");
            assertEquals(WHOLE_HUGE_KB, pmdMappedKb(consumer.segment()), "the consumer's mapping");
        }
    }

    @Test
    void aSparseReservationAllocatesOnePagePerTwoMiBAndFillAllocatesTheRest() throws IOException {
        long bytes = 5 * HugePageMapping.HUGE_PAGE + 3 * ArenaLayout.PAGE;
        Files.createFile(file);
        FileStore store = Files.getFileStore(dir);
        long before = store.getUnallocatedSpace();
        SpaceReservation.reserveSparsely(file, bytes, HugePageMapping.HUGE_PAGE);
        assertEquals(5 * ArenaLayout.PAGE, before - store.getUnallocatedSpace(), "one page in each whole 2 MiB");
        SpaceReservation.fill(file, bytes);
        assertEquals(bytes, before - store.getUnallocatedSpace(), "every block, once");
    }

    @Test
    void everyByteReadsTheSameThroughLargeSmallAndOrdinaryMappings() throws IOException {
        try (SharedArena producer = SharedArena.create(file, LAYOUT, 5, 1, true);
                SharedArena aligned = SharedArena.openReadOnly(file, LAYOUT, 5, true);
                SharedArena ordinary = SharedArena.openReadOnly(file, LAYOUT, 5, false)) {
            SplittableRandom random = new SplittableRandom(23);
            for (int slot = 0; slot < LAYOUT.slotCount(); slot++) {
                MemorySegment s = producer.slot(slot);
                for (long off = 0; off + 8 <= s.byteSize(); off += 8) {
                    s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, random.nextLong());
                }
            }
            MemorySegment written = producer.segment();
            assertEquals(-1, written.mismatch(aligned.segment()), "aligned read-only mapping");
            assertEquals(-1, written.mismatch(ordinary.segment()), "mapping at an address the kernel chose");
            // the last slot ends in 4 KiB pages past the last whole 2 MiB one
            long tail = LAYOUT.slotOffset(2) + LAYOUT.slotBytes() - 8;
            assertEquals(
                    written.get(ValueLayout.JAVA_LONG_UNALIGNED, tail),
                    ordinary.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, tail));
        }
    }

    @Test
    void closingGivesBackTheMappingAndItsReservation() throws IOException {
        long before = vmSizeKb();
        for (int i = 0; i < 40; i++) {
            try (SharedArena producer = SharedArena.create(file, LAYOUT, 5, 1, true);
                    SharedArena consumer = SharedArena.openReadOnly(file, LAYOUT, 5, true)) {
                assertEquals(
                        producer.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0),
                        consumer.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
            }
        }
        String maps = Files.readString(Path.of("/proc/self/maps"));
        assertFalse(maps.contains(file.toString()), "the arena file is still mapped");
        // 40 leaked pairs would be 40 × 2 × (22 MiB + 2 MiB) of address space
        long grown = vmSizeKb() - before;
        assertTrue(grown < 256 * 1024, "address space grew by " + grown + " kB over 40 arenas opened and closed");
    }

    @Test
    void whatCannotBeMappedSaysWhatAndTheErrno() throws IOException {
        assumeTrue(HugePageMapping.available(), "no C library with mmap and madvise here");
        try (Arena scope = Arena.ofShared()) {
            IOException missing = assertThrows(
                    IOException.class, () -> HugePageMapping.mapFile(dir.resolve("none"), 4096, false, scope));
            assertEquals("could not open " + dir.resolve("none") + " (errno 2)", missing.getMessage());
            Files.write(file, new byte[4096]);
            long absurd = 1L << 62;
            IOException reserve =
                    assertThrows(IOException.class, () -> HugePageMapping.mapFile(file, absurd, false, scope));
            assertEquals(
                    "could not reserve " + (absurd + HugePageMapping.HUGE_PAGE) + " bytes of address space for " + file
                            + " (errno 12)",
                    reserve.getMessage());
            OutOfMemoryError anonymous =
                    assertThrows(OutOfMemoryError.class, () -> HugePageMapping.anonymous(absurd, false, scope));
            assertEquals(
                    "could not map " + (absurd + HugePageMapping.HUGE_PAGE) + " bytes (errno 12)",
                    anonymous.getMessage());
        }
    }

    /** Skips where the kernel cannot back a tmpfs file by 2 MiB pages (older than 6.1, or THP denied). */
    private static void assumeCollapsible() throws IOException {
        assumeTrue(HugePageMapping.available(), "no C library with mmap and madvise here");
        Matcher m = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(System.getProperty("os.version"));
        assumeTrue(
                m.find()
                        && (Integer.parseInt(m.group(1)) > 6
                                || (Integer.parseInt(m.group(1)) == 6 && Integer.parseInt(m.group(2)) >= 1)),
                "kernel " + System.getProperty("os.version") + " has no MADV_COLLAPSE");
        Path shmem = Path.of("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
        assumeTrue(
                Files.exists(shmem) && !Files.readString(shmem).contains("[deny]"),
                "this kernel denies huge pages to shared memory (" + shmem + ")");
    }

    /** kB of the mapping that holds {@code seg} which the kernel maps by 2 MiB entries, from /proc/self/smaps. */
    static long pmdMappedKb(MemorySegment seg) throws IOException {
        long address = seg.address();
        boolean inside = false;
        long kb = 0;
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            Matcher range = Pattern.compile("^([0-9a-f]+)-([0-9a-f]+) ").matcher(line);
            if (range.find()) {
                inside = Long.parseUnsignedLong(range.group(1), 16) <= address
                        && address < Long.parseUnsignedLong(range.group(2), 16);
            } else if (inside && (line.startsWith("ShmemPmdMapped:") || line.startsWith("FilePmdMapped:"))) {
                kb += Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        return kb;
    }

    private static long vmSizeKb() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/status")).stream()
                .filter(l -> l.startsWith("VmSize:"))
                .mapToLong(l -> Long.parseLong(l.replaceAll("\\D", "")))
                .findFirst()
                .orElseThrow();
    }
}
