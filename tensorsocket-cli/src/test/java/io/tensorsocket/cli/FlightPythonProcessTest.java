package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Python client reads a Java producer served over Arrow Flight (pyarrow.flight), beside Java consumers. */
@Timeout(300)
class FlightPythonProcessTest extends ProcessTestBase {

    @BeforeEach
    void needsPyarrow() throws Exception {
        assumePyarrow();
    }

    @Test
    void pythonAndJavaRemoteConsumersSideBySideGetExactEpochs() throws Exception {
        int port = freePort();
        serve(
                "pyf",
                "samples=1000,shape=3x5x7,dtype=float32,seed=11",
                64,
                2,
                "--min-consumers",
                "3",
                "--flight",
                "127.0.0.1:" + port);
        Proc python13 = pythonConsume(uri(port, "pyf"), 13);
        Proc python1000 = pythonConsume(uri(port, "pyf"), 1000);
        Proc java7 = consume(uri(port, "pyf"), 7);
        for (Proc c : List.of(python13, python1000, java7)) {
            assertEquals(0, c.exitCode(Duration.ofMinutes(2)), c.stderr());
            assertEquals(2, c.json().size(), c.lines().toString());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, 1000, "epoch_start");
            }
        }
        assertEquals("77", python13.json().getFirst().get("batches"));
        // the same JSON lines as the Java consumer's, field for field
        assertEquals(
                java7.json().getFirst().keySet(), python13.json().getFirst().keySet());
    }

    @Test
    void pythonReadsEveryDtypeWithDropLastExactly() throws Exception {
        int port = freePort();
        serve("pyd", "samples=300,shape=4x3,dtype=uint8,seed=3", 32, 1, "--flight", "127.0.0.1:" + port);
        Proc c = pythonConsume(uri(port, "pyd"), 50, "--drop-last");
        assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
        Map<String, String> e = c.json().getFirst();
        assertEquals("300", e.get("samples"), e.toString());
        assertEquals("6", e.get("batches"), e.toString());
        assertEquals("0", e.get("corrupt"), e.toString());
    }

    @Test
    void aWrongTokenAndAWrongNameAreClearErrors() throws Exception {
        int port = freePort();
        serve(
                "pyt",
                "samples=100,shape=4,dtype=float32,seed=6",
                10,
                1,
                "--flight",
                "127.0.0.1:" + port,
                "--flight-token",
                "s3cret");
        Proc none = pythonConsume(uri(port, "pyt"), 10);
        assertEquals(1, none.exitCode(Duration.ofSeconds(30)), none.stderr());
        assertTrue(none.errorLine().contains("needs a token"), none.stderr());
        Proc name = pythonConsume(uri(port, "other"), 10, "--token", "s3cret");
        assertEquals(1, name.exitCode(Duration.ofSeconds(30)), name.stderr());
        assertTrue(name.errorLine().contains("serves producer 'pyt', not 'other'"), name.stderr());
        Proc right = startPython(
                Map.of("TENSORSOCKET_TOKEN", "s3cret"),
                "-m",
                "tensorsocket_client",
                "consume",
                "--name",
                uri(port, "pyt"),
                "--batch-size",
                "10");
        assertEquals(0, right.exitCode(Duration.ofSeconds(60)), right.stderr());
        assertExactEpoch(right.json().getFirst(), 100, "epoch_start");
    }

    @Test
    void aKilledServerFailsThePythonConsumerWithinSeconds() throws Exception {
        int port = freePort();
        Proc producer = serve(
                "pyk",
                "samples=100000,shape=8,dtype=float32,seed=4",
                10,
                0,
                "--loader-delay-ms",
                "20",
                "--flight",
                "127.0.0.1:" + port);
        Proc remote = pythonConsume(uri(port, "pyk"), 10);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!producer.stderr().contains(" joined at ") && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(producer.stderr().contains(" joined at "), producer.stderr());
        Thread.sleep(1000); // batches are flowing
        long killed = System.nanoTime();
        producer.kill();
        int code = remote.exitCode(Duration.ofSeconds(15));
        double seconds = (System.nanoTime() - killed) / 1e9;
        assertNotEquals(0, code);
        assertTrue(seconds < 5, "took " + seconds + " s to notice");
        assertTrue(remote.errorLine().contains("grpc://127.0.0.1:" + port + "/pyk"), remote.stderr());
    }
}
