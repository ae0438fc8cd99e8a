package io.tensorsocket.cli;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs the Python client's unittests (clients/python/tests): the shared protocol vectors, the generator
 * port, and batch lifetime against a live Java producer.
 */
class PythonClientTest extends ProcessTestBase {
    /**
     * A second interpreter to run the client under: a virtual environment with a torch 2.x CPU wheel and numpy 2
     * (.ci/run makes one), beside Debian's torch 1.13 and numpy 1.24.
     */
    private static final String TORCH2 = System.getenv("TENSORSOCKET_TORCH2_PYTHON");

    @Test
    void pythonUnitTestsPassAgainstAJavaProducer() throws Exception {
        assumePython("numpy");
        unitTests(PYTHON);
    }

    @Test
    void pythonUnitTestsPassUnderATorch2WheelWithNumpy2() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(TORCH2 != null && java.nio.file.Files.isExecutable(java.nio.file.Path.of(TORCH2)),
                "SKIPPED: no torch 2.x interpreter (set TENSORSOCKET_TORCH2_PYTHON, as .ci/run does)");
        Proc versions = startPython(TORCH2, Map.of(), "-c", "import torch, numpy; print(torch.__version__, numpy.__version__)");
        assertEquals(0, versions.exitCode(Duration.ofSeconds(60)), versions.stderr());
        System.out.println("torch, numpy: " + versions.lines());
        assertTrue(versions.lines().getFirst().startsWith("2.") && versions.lines().getFirst().split(" ")[1].startsWith("2."),
                versions.lines().toString());
        unitTests(TORCH2);
        // A torch 2 DataLoader fed through the feeder, read by trainers that unpack their batches.
        Proc feeder = startPython(TORCH2, Map.of("OMP_NUM_THREADS", "1"),
                pythonClient().resolve("tests/scripts/feed_case.py").toString(), "torch2", "ok", "--workers", "2");
        String trainer = pythonClient().resolve("tests/scripts/train_case.py").toString();
        for (Proc t : java.util.List.of(startPython(TORCH2, Map.of(), trainer, "torch2", "64", "2"),
                startPython(TORCH2, Map.of(), trainer, "torch2", "100", "2"))) {
            assertEquals(0, t.exitCode(Duration.ofSeconds(90)), t.stderr());
            assertEquals(2, t.json().size(), t.lines().toString());
            t.json().forEach(e -> assertEquals("true", e.get("exact"), e.toString()));
        }
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(30)), feeder.stderr());
    }

    private void unitTests(String python) throws Exception {
        serve("life", "samples=2000,shape=5x3,dtype=float32,seed=11", 16, 0);
        Proc tests = startPython(python, Map.of("TENSORSOCKET_TEST_DIR", base.resolve("life").toString()),
                "-m", "unittest", "discover", "-v", "-s", pythonClient().resolve("tests").toString());
        int rc = tests.exitCode(Duration.ofSeconds(90));
        String report = tests.stderr();
        System.out.println(report.lines().filter(l -> l.startsWith("Ran ") || l.startsWith("OK") || l.contains("skipped"))
                .reduce((a, b) -> a + "; " + b).orElse(""));
        assertEquals(0, rc, report);
        assertTrue(report.contains("LifetimeTest"), report);
    }
}
