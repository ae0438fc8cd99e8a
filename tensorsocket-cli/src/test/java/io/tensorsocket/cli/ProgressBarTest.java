package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProgressBarTest {

    private static String run(boolean tty) throws InterruptedException {
        PrintStream saved = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try (ProgressBar bar = new ProgressBar(10, tty, 0.3)) {
            bar.phase("private: 2 jobs");
            Thread.sleep(1300);
        } finally {
            System.setErr(saved);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void whenPipedItPrintsPlainLinesAtIntervalsNotJustAtPhaseStarts() throws Exception {
        String out = run(false);
        List<String> lines = out.lines().toList();
        assertTrue(lines.getFirst().endsWith("] private: 2 jobs"), out);
        assertTrue(
                lines.size() >= 3
                        && lines.get(1).contains("private: 2 jobs: ")
                        && lines.get(1).endsWith("% done"),
                out);
        assertFalse(out.contains("\r") || out.contains("\033"), out);
    }

    @Test
    void onATerminalItRedrawsOneLineAndClearsItAtTheEnd() throws Exception {
        String out = run(true);
        assertTrue(out.contains("\r["), out);
        assertTrue(out.endsWith("\r" + " ".repeat(121) + "\r"), "the bar is wiped when it closes");
        assertFalse(out.contains("\n"), out);
    }
}
