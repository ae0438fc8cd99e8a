package io.tensorsocket.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/test-vectors/flight-tags.txt}: one {@link RecordTag} of each kind as the server encodes it, read
 * back here and by the Python client's Flight consumer tests. Run with {@code -Dtensorsocket.writeVectors=true}
 * to rewrite it after a deliberate change.
 */
class RecordTagVectorsTest {

    @Test
    void oneTagOfEachKind() throws IOException {
        List<RecordTag> tags = List.of(
                new RecordTag(RecordTag.Kind.BATCH, 3, 12, 768, 3 * 50000 + 768, 64),
                new RecordTag(RecordTag.Kind.END_OF_EPOCH, 3, 782, 0, 0, 50000),
                new RecordTag(RecordTag.Kind.END_OF_STREAM, 0, 0, 0, 0, 0),
                RecordTag.heartbeat());
        List<String> lines = new ArrayList<>();
        lines.add("# <kind> <epoch> <index> <sample_start> <stream_pos> <samples> <the 48-byte tag, hex>");
        try (BufferAllocator allocator = new RootAllocator()) {
            for (RecordTag t : tags) {
                byte[] bytes;
                try (ArrowBuf b = t.encode(allocator)) {
                    bytes = new byte[RecordTag.BYTES];
                    b.getBytes(0, bytes);
                }
                assertEquals(t, RecordTag.decode(bytes));
                lines.add(
                        t.kind() + " " + t.epoch() + " " + t.index() + " " + t.sampleStart() + " " + t.streamPosition()
                                + " " + t.samples() + " " + HexFormat.of().formatHex(bytes));
            }
        }
        Path file = vectors().resolve("flight-tags.txt");
        String text = String.join("\n", lines) + "\n";
        if (Boolean.getBoolean("tensorsocket.writeVectors")) {
            Files.writeString(file, text);
        }
        assertEquals(Files.readString(file), text);
    }

    private static Path vectors() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("docs/test-vectors"))) {
                return p.resolve("docs/test-vectors");
            }
        }
        throw new AssertionError(
                "docs/test-vectors not found above " + Path.of("").toAbsolutePath());
    }
}
