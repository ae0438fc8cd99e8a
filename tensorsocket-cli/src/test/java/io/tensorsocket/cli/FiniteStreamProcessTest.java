package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code serve --epochs N} and consumers in their own JVMs (and a Python one), as users launch them: those started in
 * the same second as the first all begin at epoch 0 (the start grace); one started later joins mid-epoch and still gets
 * every epoch left whole, its last one completed after the stream's end; one asking for more epochs than the stream has
 * gets those there are and is told how many; one that joins a source fixing its own order late is told its last epoch
 * is short. Every epoch checked sample by sample.
 */
class FiniteStreamProcessTest extends ProcessTestBase {
    private static final int SAMPLES = 2000;

    @Test
    void consumersStartedTogetherAndOneLateAllGetEveryEpochLeftWhole() throws Exception {
        // 100 batches of about 25 ms an epoch (5 s for the stream after the default 2 s grace): the late consumer,
        // started 2.6 s after the first joined, joins while the stream runs however slowly its JVM starts
        Proc producer = serve(
                "finite",
                "samples=" + SAMPLES + ",shape=4,dtype=float32,seed=58",
                20,
                2,
                "--loader-delay-ms",
                "25",
                "--rubber-band",
                "1",
                "--start-grace-ms",
                "2000");
        List<Proc> together = new ArrayList<>();
        for (int b : new int[] {7, 20, 64}) {
            together.add(consume("finite", b));
        }
        if (pythonAvailable()) {
            together.add(pythonConsume("finite", 33));
        }
        Proc more = consume("finite", 50, "--epochs", "3");
        awaitJoined(producer, together.size() + 1);
        Thread.sleep(2600); // past the grace, inside epoch 0
        Proc late = consume("finite", 30);

        for (Proc c : together) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(90)), c.stderr());
            assertEquals(2, c.json().size(), c.json().toString());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, SAMPLES, "epoch_start");
            }
        }
        assertEquals(1, more.exitCode(Duration.ofSeconds(90)), more.stderr());
        assertEquals(2, more.json().size(), more.json().toString());
        assertTrue(more.stderr().contains("got 2 epochs"), more.stderr());

        assertEquals(0, late.exitCode(Duration.ofSeconds(90)), late.stderr() + producer.stderr());
        Map<String, String> first = late.json().getFirst();
        long start = Long.parseLong(first.get("start_epoch")) * SAMPLES + Long.parseLong(first.get("start_sample"));
        assertTrue(start % SAMPLES > 0, "the late consumer joined mid-epoch: " + first);
        long owed = (2L * SAMPLES - start + SAMPLES - 1) / SAMPLES;
        assertEquals(owed, late.json().size(), late.json().toString());
        for (Map<String, String> e : late.json()) {
            assertExactEpoch(e, SAMPLES, "exact");
        }
        assertTrue(producer.stderr().contains("loads the first"), producer.stderr());
    }

    @Test
    void aLateJoinerOfASourceThatFixesItsOrderIsToldItsLastEpochIsShort() throws Exception {
        Proc producer = serve(
                "rolling",
                "samples=" + SAMPLES + ",shape=4,dtype=float32,seed=59,order=seeded",
                20,
                2,
                "--loader-delay-ms",
                "8",
                "--rubber-band",
                "1");
        Proc first = consume("rolling", 20);
        awaitJoined(producer, 1);
        Thread.sleep(400);
        Proc late = consume("rolling", 25);
        assertEquals(0, first.exitCode(Duration.ofSeconds(60)), first.stderr());
        assertEquals(1, late.exitCode(Duration.ofSeconds(60)), late.stderr());
        assertTrue(late.stderr().contains("samples short of this consumer's epoch"), late.stderr());
        assertTrue(late.stderr().contains("fixes its own order"), late.stderr());
    }
}
