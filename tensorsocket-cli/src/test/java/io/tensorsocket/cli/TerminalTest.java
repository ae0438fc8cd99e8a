package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class TerminalTest {

    @Test
    void wrapBreaksAtSpacesAndNeverInsideAWord() {
        String source =
                "idx mean=0.286 std=0.353 images=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz samples=60000";
        assertEquals(
                "idx mean=0.286 std=0.353\n  images=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz\n"
                        + "  samples=60000",
                Terminal.wrap(source, 30, "  ", 10));
        assertEquals("a b\n  c d ...", Terminal.wrap("a b c d e f", 3, "  ", 2));
        assertEquals("short", Terminal.wrap("  short ", 30, "  ", 1));
    }
}
