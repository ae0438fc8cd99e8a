package io.tensorsocket.arena;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.rings.RingLayout;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The shared vectors of the shared-memory layouts, written by this test and read by the Python client's
 * tests: {@code arena-layout.txt} (tensors and batch size to region offsets, slot and file bytes, as
 * {@link ArenaLayout} computes them) and {@code rings-header.txt} (a rings file header as {@link RingLayout}
 * writes it, with the field offsets of a ring). Run with {@code -Dtensorsocket.writeVectors=true} to rewrite
 * them after a deliberate change of a layout.
 */
class LayoutVectorsTest {

    static Path vectors() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("docs/test-vectors"))) {
                return p.resolve("docs/test-vectors");
            }
        }
        throw new AssertionError(
                "docs/test-vectors not found above " + Path.of("").toAbsolutePath());
    }

    private static void check(String name, String text) throws IOException {
        Path file = vectors().resolve(name);
        if (Boolean.getBoolean("tensorsocket.writeVectors")) {
            Files.writeString(file, text);
        }
        assertEquals(Files.readString(file), text, name + " differs from what this build computes");
    }

    private static String spec(TensorSpec t) {
        return t.name() + ":" + t.dtype().lowerName() + ":"
                + Arrays.stream(t.sampleShape()).mapToObj(Long::toString).collect(Collectors.joining("x"));
    }

    @Test
    void arenaLayouts() throws IOException {
        List<List<TensorSpec>> cases = List.of(
                List.of(TensorSpec.of("image", DType.FLOAT32, 3, 224, 224), TensorSpec.of("label", DType.INT64)),
                List.of(
                        TensorSpec.of("x", DType.UINT8, 7),
                        TensorSpec.of("y", DType.BOOL, 3),
                        TensorSpec.of("z", DType.BFLOAT16, 5)),
                List.of(TensorSpec.of("scalar", DType.FLOAT64)),
                List.of(TensorSpec.of("image", DType.UINT8, 1, 28, 28), TensorSpec.of("label", DType.INT64)));
        int[][] geometry = {{64, 8}, {1, 3}, {1000, 2}, {128, 64}};
        List<String> lines = new ArrayList<>();
        lines.add("# <batch size> <slots> <tensor:dtype:shape,...> -> <slot bytes> <file bytes> <region offsets>");
        for (int i = 0; i < cases.size(); i++) {
            ArenaLayout l = ArenaLayout.of(new BatchLayout(cases.get(i), geometry[i][0]), geometry[i][1]);
            List<String> offsets = new ArrayList<>();
            for (int t = 0; t < cases.get(i).size(); t++) {
                offsets.add(Long.toString(l.regionOffset(t)));
            }
            lines.add(geometry[i][0] + " " + geometry[i][1] + " "
                    + cases.get(i).stream().map(LayoutVectorsTest::spec).collect(Collectors.joining(",")) + " -> "
                    + l.slotBytes() + " " + l.fileBytes() + " " + String.join(",", offsets));
        }
        check("arena-layout.txt", String.join("\n", lines) + "\n");
    }

    @Test
    void ringsHeader() throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment head = a.allocate(RingLayout.HEADER_BYTES);
            RingLayout.writeHeader(head, 3, -77, RingLayout.capacityFor(16));
            String text =
                    "# rings file header: magic u64, version u32, rings u32, sessionId i64, capacity u32, entryBytes u32;"
                            + " rings 3, sessionId -77, capacity " + RingLayout.capacityFor(16) + "\n"
                            + HexFormat.ofDelimiter(" ")
                                    .formatHex(head.asSlice(0, 32).toArray(ValueLayout.JAVA_BYTE)) + "\n"
                            + "# a ring's fields (offset in the ring): owner i32 " + RingLayout.OWNER
                            + ", doorbell i32 "
                            + RingLayout.DOORBELL + ", tail i64 " + RingLayout.TAIL + ", cursor i64 "
                            + RingLayout.CURSOR
                            + ", parked i32 " + RingLayout.PARKED + ", entries from " + RingLayout.RING_HEADER_BYTES
                            + " of "
                            + RingLayout.ENTRY_BYTES + " bytes; ring k at " + RingLayout.HEADER_BYTES + " + k * ("
                            + RingLayout.RING_HEADER_BYTES + " + capacity * " + RingLayout.ENTRY_BYTES + ")\n"
                            + "fields owner=" + RingLayout.OWNER + " doorbell=" + RingLayout.DOORBELL + " tail="
                            + RingLayout.TAIL
                            + " cursor=" + RingLayout.CURSOR + " parked=" + RingLayout.PARKED + " entries="
                            + RingLayout.RING_HEADER_BYTES
                            + " entry_bytes=" + RingLayout.ENTRY_BYTES + " file_header=" + RingLayout.HEADER_BYTES
                            + "\n"
                            + "ring_offset 2 " + RingLayout.ringOffset(2, RingLayout.capacityFor(16)) + "\n";
            check("rings-header.txt", text);
        }
    }
}
