package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Joining a sweep, with real processes: the start grace lets jobs launched together all start at the epoch
 * start; a late consumer that asks to wait for the next epoch start gets that epoch whole, one that does not
 * rolls; and a producer that serves until stopped has no idle timeout unless given one.
 */
class SweepStartProcessTest extends ProcessTestBase {

    @Test
    void twoConsumersStartedHalfASecondApartBothGetWholeEpochs() throws Exception {
        // A fast loader: without the grace, the second consumer would arrive far beyond the rubber band (the
        // epoch takes under half a second). The grace is the default's double: on a loaded 2-core machine two
        // JVMs started half a second apart may reach the producer more than 2 s apart.
        Proc producer = serve("sweep", "samples=3000,shape=8,dtype=float32,seed=8", 10, 1, "--start-grace-ms", "4000");
        Proc first = consume("sweep", 10);
        Thread.sleep(500);
        Proc second = consume("sweep", 10);
        for (Proc c : List.of(first, second)) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            assertEquals(1, c.json().size(), c.json().toString());
            assertExactEpoch(c.json().getFirst(), 3000, "epoch_start");
        }
        assertEquals(0, producer.exitCode(Duration.ofSeconds(30)), producer.stderr());
    }

    @Test
    void aLateConsumerMayWaitForTheNextEpochStartInsteadOfStartingMidEpoch() throws Exception {
        boolean python = pythonAvailable();
        int port = freePort();
        Proc producer = serve(
                "late",
                "samples=3000,shape=8,dtype=float32,seed=9",
                10,
                4,
                "--start-grace-ms",
                "0",
                "--lanes",
                "0",
                "--flight",
                "127.0.0.1:" + port);
        // 6 s for its epoch, which keeps the producer in epoch 0 (or 1) while the late ones start (without lanes: the
        // fast ones read at its pace rather than race through the epochs)
        Proc first = consume("late", 10, "--step-ms", "20", "--epochs", "1");
        awaitJoined(producer, 1);
        Thread.sleep(1000);
        Proc waiting = consume("late", 10, "--epochs", "1", "--wait-for-epoch-start");
        Proc midEpoch = consume("late", 10, "--epochs", "1");
        // the same policy through a Flight server: the remote's consumer on the serving host waits too
        Proc remoteWaiting = consume(uri(port, "late"), 10, "--epochs", "1", "--wait-for-epoch-start");
        List<Proc> late = new ArrayList<>(List.of(waiting, remoteWaiting));
        if (python) {
            late.add(pythonConsume("late", 10, "--epochs", "1", "--wait-for-epoch-start"));
            late.add(pythonConsume(uri(port, "late"), 10, "--epochs", "1", "--wait-for-epoch-start"));
        }
        for (Proc c : late) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(90)), c.stderr());
            Map<String, String> epoch = c.json().getFirst();
            assertExactEpoch(epoch, 3000, "epoch_start"); // every sample's bytes checked against the generator
            assertTrue(
                    Long.parseLong(epoch.get("start_epoch")) >= 1,
                    "a later epoch than the one it arrived in: " + epoch);
            assertEquals(epoch.get("start_epoch"), epoch.get("epoch"), epoch.toString());
        }
        assertEquals(0, midEpoch.exitCode(Duration.ofSeconds(90)), midEpoch.stderr());
        // One pass although it joined mid-epoch ("exact"), or, if its JVM came late enough on a loaded machine to meet
        // an epoch start, from there.
        assertExactEpoch(midEpoch.json().getFirst(), 3000);
        assertEquals(0, first.exitCode(Duration.ofSeconds(60)), first.stderr());
        assertTrue(producer.stderr().contains("waiting for that epoch to start"), producer.stderr());
    }

    @Test
    void aProducerWhoseConsumersCameAndLeftEndsAtItsIdleTimeoutAsANormalEnd() throws Exception {
        // The consumer first (it waits for the producer), so that the short idle timeout cannot pass before it came.
        Proc c = consume("served", 10, "--epochs", "1");
        Proc producer = serve("served", "samples=500,shape=4,dtype=float32,seed=1", 10, 0, "--idle-timeout-s", "1");
        assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
        assertExactEpoch(c.json().getFirst(), 500);
        assertEquals(0, producer.exitCode(Duration.ofSeconds(30)), producer.stderr());
        assertTrue(
                producer.stderr()
                        .lines()
                        .anyMatch(l -> l.contains(" INFO ")
                                && l.endsWith("producer 'served' ends: its consumers left and none came back within"
                                        + " 1 s (the idle timeout, --idle-timeout-s)")),
                producer.stderr());
        assertFalse(producer.stderr().contains("error"), producer.stderr());
    }

    @Test
    void servingUntilStoppedHasNoIdleTimeoutUnlessOneIsGiven() throws Exception {
        Proc forever = serve("forever", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        Proc bounded = serve("bounded", "samples=100,shape=4,dtype=float32,seed=1", 10, 0, "--idle-timeout-s", "1");
        assertNotEquals(0, bounded.exitCode(Duration.ofSeconds(30)), bounded.stderr());
        assertEquals(
                "tensorsocket: error: producer 'bounded' stopped: no consumer attached within 1 s (the idle timeout,"
                        + " --idle-timeout-s); raise it to wait longer",
                bounded.errorLine());
        Thread.sleep(1000);
        assertTrue(forever.isAlive(), "an --epochs 0 producer without consumers keeps waiting: " + forever.stderr());
        assertTrue(
                forever.stderr().contains("waits for 1 consumer(s) before it starts (until stopped)"),
                forever.stderr());
        assertFalse(forever.stderr().contains("stopped:"), forever.stderr());
    }
}
