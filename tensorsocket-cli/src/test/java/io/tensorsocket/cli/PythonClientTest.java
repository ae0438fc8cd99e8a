package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The Python client under a torch 2.x wheel with numpy 2, as processes: a DataLoader fed through the feeder, read by
 * trainers that unpack their batches. The client's unit tests (clients/python/tests) run as a Python step of their
 * own, under both interpreters ({@code .ci/python-checks}).
 */
class PythonClientTest extends ProcessTestBase {
    /**
     * A second interpreter to run the client under: a virtual environment with a torch 2.x CPU wheel and numpy 2
     * (.ci/run makes one), beside Debian's torch 1.13 and numpy 1.24.
     */
    private static final String TORCH2 = System.getenv("TENSORSOCKET_TORCH2_PYTHON");

    @Test
    void aTorch2DataLoaderFeedsTrainersUnderNumpy2() throws Exception {
        Assumptions.assumeTrue(
                TORCH2 != null && Files.isExecutable(Path.of(TORCH2)),
                "SKIPPED: no torch 2.x interpreter (set TENSORSOCKET_TORCH2_PYTHON, as .ci/run does)");
        Proc versions =
                startPython(TORCH2, Map.of(), "-c", "import torch, numpy; print(torch.__version__, numpy.__version__)");
        assertEquals(0, versions.exitCode(Duration.ofSeconds(60)), versions.stderr());
        System.out.println("torch, numpy: " + versions.lines());
        assertTrue(
                versions.lines().getFirst().startsWith("2.")
                        && versions.lines().getFirst().split(" ")[1].startsWith("2."),
                versions.lines().toString());
        // A torch 2 DataLoader fed through the feeder, read by trainers that unpack their batches.
        Proc feeder = startPython(
                TORCH2,
                Map.of("OMP_NUM_THREADS", "1"),
                pythonClient().resolve("tests/scripts/feed_case.py").toString(),
                "torch2",
                "ok",
                "--workers",
                "2");
        String trainer = pythonClient().resolve("tests/scripts/train_case.py").toString();
        for (Proc t : List.of(
                startPython(TORCH2, Map.of(), trainer, "torch2", "64", "2"),
                startPython(TORCH2, Map.of(), trainer, "torch2", "100", "2"))) {
            assertEquals(0, t.exitCode(Duration.ofSeconds(90)), t.stderr());
            assertEquals(2, t.json().size(), t.lines().toString());
            t.json().forEach(e -> assertEquals("true", e.get("exact"), e.toString()));
        }
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(30)), feeder.stderr());
    }
}
