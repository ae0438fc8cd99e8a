package io.tensorsocket.cli;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The producer dies, is replaced, or is refused: consumers get a specific error quickly, never a hang. */
class FailureProcessTest extends ProcessTestBase {

    @Test
    void killedProducerMakesConsumersFailWithinASecond() throws Exception {
        Proc producer = serve("dies", "samples=100000,shape=8,dtype=float32,seed=1", 10, 0);
        Proc a = consume("dies", 10, "--step-ms", "2");
        Proc b = consume("dies", 45, "--step-ms", "2");
        producer.awaitLine(l -> true, Duration.ofSeconds(5));
        Thread.sleep(1500); // both are iterating
        long killedAt = System.nanoTime();
        producer.kill();
        for (Proc c : new Proc[]{a, b}) {
            assertNotEquals(0, c.exitCode(Duration.ofSeconds(10)));
            assertTrue(c.errorLine().contains("lost the connection to producer 'dies'"), c.errorLine());
        }
        double seconds = (System.nanoTime() - killedAt) / 1e9;
        // one second to notice, plus the JVMs' own exit
        assertTrue(seconds < 3, "consumers took " + seconds + " s to fail");
    }

    @Test
    void restartedProducerReclaimsTheStaleDirectoryAndServesNewConsumers() throws Exception {
        Proc first = serve("phoenix", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        first.kill();
        assertTrue(java.nio.file.Files.exists(base.resolve("phoenix").resolve("control.sock")), "a SIGKILL leaves files");
        Proc stale = consume("phoenix", 10);
        assertNotEquals(0, stale.exitCode(Duration.ofSeconds(30)));
        assertTrue(stale.errorLine().contains("is not running"), stale.errorLine());

        Proc second = serve("phoenix", "samples=100,shape=4,dtype=float32,seed=1", 10, 1);
        assertTrue(second.stderr().contains("reclaimed"), second.stderr());
        Proc c = consume("phoenix", 10);
        assertEquals(0, c.exitCode(Duration.ofSeconds(30)), c.stderr());
        assertExactEpoch(c.json().getFirst(), 100, "epoch_start");
    }

    @Test
    void aSecondLiveProducerOfTheSameNameIsRefused() throws Exception {
        serve("taken", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        Proc second = start("serve", "--name", "taken", "--synthetic", "samples=10", "--batch-size", "2");
        assertEquals(1, second.exitCode(Duration.ofSeconds(30)));
        assertTrue(second.errorLine().contains("already running"), second.errorLine());
    }

    @Test
    void producerWithBoundedEpochsExitsCleanly() throws Exception {
        Proc producer = serve("bounded", "samples=100,shape=4,dtype=float32,seed=1", 10, 3);
        Proc c = consume("bounded", 9);
        assertEquals(0, c.exitCode(Duration.ofSeconds(30)), c.stderr());
        assertEquals(3, c.json().size());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(30)), producer.stderr());
        assertTrue(!java.nio.file.Files.exists(base.resolve("bounded")), "the producer removes its directory");
    }
}
