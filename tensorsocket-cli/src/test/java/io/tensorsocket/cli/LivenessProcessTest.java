package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Liveness with real processes: a stopped producer (SIGSTOP) is reported by Java and Python consumers alike
 * within about their liveness timeout, naming its pid; a producer whose loader takes far longer than that
 * for each batch, but is alive, never is.
 */
@Tag("timed") // it times a slow loader against the liveness timeout
class LivenessProcessTest extends ProcessTestBase {

    @Test
    void aStoppedProducerIsReportedAsNotRespondingWithItsPid() throws Exception {
        ProcessTestBase.assumePython("numpy");
        Proc producer = serve("hung", "samples=100000,shape=16,dtype=float32,seed=5", 50, 0);
        Proc java = consume("hung", 50, "--liveness-s", "3", "--progress-ms", "1");
        Proc python = pythonConsume("hung", 50, "--liveness-s", "3");
        awaitJoined(producer, 2);
        java.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30)); // streaming, not connecting
        Thread.sleep(500);
        long stopped = System.nanoTime();
        producer.signal("STOP");
        try {
            for (Proc c : List.of(java, python)) {
                assertNotEquals(0, c.exitCode(Duration.ofSeconds(30)), c.stderr());
                double seconds = (System.nanoTime() - stopped) / 1e9;
                String err = c.errorLine();
                System.out.printf(
                        "%s consumer noticed the stopped producer after %.1f s: %s%n",
                        c == java ? "java" : "python", seconds, err);
                assertTrue(
                        err.contains("is not responding")
                                && err.contains("pid " + producer.pid())
                                && err.contains("SIGSTOP"),
                        err);
                // loosely: a hang, or a consumer that waits for something other than its liveness timeout
                assertTrue(seconds < 15, "noticed after " + seconds + " s with a liveness of 3 s");
            }
        } finally {
            producer.signal("CONT");
        }
    }

    @Test
    void aSlowLoaderIsNotMistakenForAHang() throws Exception {
        ProcessTestBase.assumePython("numpy");
        // one batch every 9 s, consumers that accept 3 s of silence: only heartbeats keep them
        Proc producer = serve(
                "slow",
                "samples=20,shape=4,dtype=float32,seed=6",
                10,
                1,
                "--loader-delay-ms",
                "9000",
                "--min-consumers",
                "2");
        Proc java = consume("slow", 10, "--liveness-s", "3");
        Proc python = pythonConsume("slow", 10, "--liveness-s", "3");
        for (Proc c : List.of(java, python)) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(90)), c.stderr());
            List<Map<String, String>> epochs = c.json();
            assertEquals(1, epochs.size(), epochs.toString());
            assertExactEpoch(epochs.getFirst(), 20, "epoch_start");
        }
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
    }
}
