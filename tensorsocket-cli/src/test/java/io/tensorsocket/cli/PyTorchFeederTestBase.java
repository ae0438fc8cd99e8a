package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What the PyTorch users' process tests share: a feeder started from {@code tests/scripts/feed_case.py}, and the
 * checks that its producer's directory exists or that nothing of it is left.
 */
abstract class PyTorchFeederTestBase extends ProcessTestBase {

    protected Proc feedCase(String name, String kase, String... extra) throws Exception {
        List<String> args = new ArrayList<>(
                List.of(pythonClient().resolve("tests/scripts/feed_case.py").toString(), name, kase));
        args.addAll(List.of(extra));
        return startPython(Map.of("OMP_NUM_THREADS", "1"), args.toArray(String[]::new));
    }

    /** The producer a feeder started is gone, and so is its directory, within {@code seconds}. */
    protected void assertNothingLeft(String name, int seconds) throws Exception {
        Path dir = base.resolve(name);
        long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        while (Files.exists(dir) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertFalse(Files.exists(dir), "directory of producer '" + name + "' left behind");
        while (true) { // the process ends just after it removed its directory
            Proc ps = startCommand(List.of("pgrep", "-f", "serve --name " + name + " "));
            int found = ps.exitCode(Duration.ofSeconds(10));
            if (found == 1) {
                return;
            }
            assertTrue(
                    System.nanoTime() < deadline + Duration.ofSeconds(5).toNanos(),
                    "a producer process is left: " + ps.lines());
            Thread.sleep(100);
        }
    }

    protected void awaitDirectory(String name) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!Files.exists(base.resolve(name).resolve("control.sock")) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }
}
