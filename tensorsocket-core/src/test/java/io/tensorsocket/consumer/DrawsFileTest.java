package io.tensorsocket.consumer;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A producer's draws file as a checkpoint reads it: the header, the draws, a last line still being written left out,
 * and the chain that replays an epoch's orders from the fresh draw they follow on (the Python client's
 * {@code _checkpoint.chain} is the same rule, {@code test_stream.py}).
 */
class DrawsFileTest {
    @TempDir
    Path dir;

    @Test
    void theChainStartsAtTheFreshDrawAndStopsAtTheLastDrawn() throws Exception {
        Files.writeString(
                dir.resolve("draws"),
                "tensorsocket-draws 1\nkey -12 dataset 600 samples 600 shuffle 1\n0\n1 300\n2 300 40\n3\n4 7\n5 1");
        DrawsFile d = DrawsFile.read(dir);
        assertEquals(-12L, d.header().get("key"));
        assertEquals(600L, d.header().get("dataset"));
        assertFalse(d.draws().containsKey(5L), "a last line without its newline is still being written");
        assertArrayEquals(new long[] {0, 0, 1, 1, 300, 2, 2, 300, 40}, d.chain(2, 2));
        assertArrayEquals(new long[] {3, 0, 4, 1, 7}, d.chain(4, 5), "epoch 5 is not drawn yet");
        assertArrayEquals(new long[0], d.chain(6, 6), "an epoch not drawn yet: nothing to replay");
        assertNull(DrawsFile.read(dir.resolve("none")), "a producer that logs no draws");
    }
}
