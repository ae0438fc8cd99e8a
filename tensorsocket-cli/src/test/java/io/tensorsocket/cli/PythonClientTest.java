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

    @Test
    void pythonUnitTestsPassAgainstAJavaProducer() throws Exception {
        assumePython("numpy");
        serve("life", "samples=2000,shape=5x3,dtype=float32,seed=11", 16, 0);
        Proc tests = startPython(Map.of("TENSORSOCKET_TEST_DIR", base.resolve("life").toString()),
                "-m", "unittest", "discover", "-v", "-s", pythonClient().resolve("tests").toString());
        int rc = tests.exitCode(Duration.ofSeconds(90));
        String report = tests.stderr();
        System.out.println(report.lines().filter(l -> l.startsWith("Ran ") || l.startsWith("OK") || l.contains("skipped"))
                .reduce((a, b) -> a + "; " + b).orElse(""));
        assertEquals(0, rc, report);
        assertTrue(report.contains("LifetimeTest"), report);
    }
}
