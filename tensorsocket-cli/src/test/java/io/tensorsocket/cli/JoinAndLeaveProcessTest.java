package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Consumers that arrive late, die, or stall, while the others carry on exactly. */
@Tag("timed") // its late joiners must start a JVM inside a window of seconds; beside a heavy class one missed it
class JoinAndLeaveProcessTest extends ProcessTestBase {

    @Test
    void lateJoinerInsideTheRubberBandStartsAtTheEpochStart() throws Exception {
        // A slow loader (300 ms per batch) and a 16-batch rubber band: the epoch's first batch stays
        // retained for 4.8 s, longer than the second JVM takes to start, also beside another test class (at 150 ms,
        // 2.4 s, a loaded machine started it too late once).
        Proc producer = serve(
                "band",
                "samples=200,shape=4,dtype=float32,seed=1",
                10,
                2,
                "--loader-delay-ms",
                "300",
                "--rubber-band",
                "16");
        Proc first = consume("band", 10);
        awaitJoined(producer, 1);
        Proc late = consume("band", 7);
        assertEquals(0, first.exitCode(Duration.ofSeconds(60)), first.stderr());
        assertEquals(0, late.exitCode(Duration.ofSeconds(60)), late.stderr());
        for (Proc c : List.of(first, late)) {
            assertEquals(2, c.json().size(), c.json().toString());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, 200, "epoch_start");
            }
        }
    }

    @Test
    void lateJoinerOutsideTheWindowOfASeededSourceRollsAndIsToldItsLastEpochIsShort() throws Exception {
        // 80 batches of 100 ms per epoch and a 2-batch window: a consumer arriving a second or a few later starts
        // inside the first epoch (at 50 ms, a 4 s epoch, a loaded machine started it in the second once);
        // order=seeded keeps the source's own order, so it rolls (ExactEpochsProcessTest: the default, exact).
        Proc producer = serve(
                "roll",
                "samples=800,shape=4,dtype=float32,seed=2,order=seeded",
                10,
                2,
                "--loader-delay-ms",
                "100",
                "--rubber-band",
                "2");
        Proc first = consume("roll", 10);
        awaitJoined(producer, 1);
        Thread.sleep(800);
        Proc late = consume("roll", 25);
        assertEquals(0, first.exitCode(Duration.ofSeconds(60)), first.stderr());
        assertEquals(1, late.exitCode(Duration.ofSeconds(60)), late.stderr());
        for (Map<String, String> e : first.json()) {
            assertExactEpoch(e, 800, "epoch_start");
        }
        List<Map<String, String>> rolling = late.json();
        assertEquals(1, rolling.size(), rolling.toString());
        Map<String, String> full = rolling.get(0);
        assertEquals("rolling", full.get("start"));
        assertEquals("800", full.get("samples"), full.toString());
        assertEquals("true", full.get("complete"));
        assertEquals("0", full.get("corrupt"));
        assertEquals("0", full.get("out_of_order"), "a rolling epoch is the producer's stream, in order");
        // the stream ended inside its second rolling epoch: never cut short silently
        assertTrue(late.errorLine().contains("samples short of this consumer's epoch 1"), late.stderr());
        assertTrue(late.errorLine().contains("its source fixes its own order"), late.stderr());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
    }

    @Test
    void killedConsumerReleasesEverythingAtOnceAndTheOthersFinishExactly() throws Exception {
        // The stall timeout is a minute: the survivors must not wait for it.
        Proc producer = serve(
                "kill",
                "samples=3000,shape=8,dtype=float32,seed=3",
                20,
                2,
                "--min-consumers",
                "3",
                "--stall-timeout-s",
                "60");
        Proc a = consume("kill", 20, "--step-ms", "8");
        Proc b = consume("kill", 50, "--step-ms", "8");
        Proc victim = consume("kill", 30, "--step-ms", "8");
        awaitJoined(producer, 3);
        Thread.sleep(700);
        assertTrue(victim.isAlive(), "the victim should still be mid-epoch");
        long killedAt = System.nanoTime();
        victim.kill();
        assertEquals(0, a.exitCode(Duration.ofSeconds(50)), a.stderr());
        assertEquals(0, b.exitCode(Duration.ofSeconds(50)), b.stderr());
        double secondsAfterKill = (System.nanoTime() - killedAt) / 1e9;
        assertTrue(secondsAfterKill < 30, "survivors took " + secondsAfterKill + " s after the kill");
        for (Proc c : List.of(a, b)) {
            assertEquals(2, c.json().size());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, 3000, "epoch_start");
            }
        }
        // The producer notices on whichever side comes first: reading the closed socket, or writing a batch to it.
        assertTrue(
                producer.stderr().contains("left (disconnected)")
                        || producer.stderr().contains("left (connection closed)")
                        || producer.stderr().contains("left (connection lost)"),
                producer.stderr());
    }

    @Test
    void stalledConsumerIsEvictedAndTheOthersContinue() throws Exception {
        Proc producer = serve(
                "stall",
                "samples=2000,shape=8,dtype=float32,seed=4",
                10,
                2,
                "--min-consumers",
                "2",
                "--stall-timeout-s",
                "3"); // long enough that a healthy consumer descheduled for a moment is not the one evicted
        Proc healthy = consume("stall", 10, "--step-ms", "1");
        Proc stalled = consume("stall", 10, "--step-ms", "1", "--progress-ms", "1");
        awaitJoined(producer, 2);
        awaitMapped(stalled, base.resolve("stall/arena")); // stopped mid-stream, not half-way through connecting
        stalled.signal("STOP");
        try {
            assertEquals(0, healthy.exitCode(Duration.ofSeconds(60)), healthy.stderr());
        } finally {
            stalled.signal("CONT");
        }
        for (Map<String, String> e : healthy.json()) {
            assertExactEpoch(e, 2000, "epoch_start");
        }
        assertEquals(2, healthy.json().size());
        assertFalse(stalled.exitCode(Duration.ofSeconds(30)) == 0);
        String err = stalled.errorLine();
        assertTrue(err.contains("stall timeout") && err.contains("disconnected"), err);
    }

    /** Waits until {@code p} has mapped {@code arena}, i.e. finished connecting. */
    private static void awaitMapped(Proc p, Path arena) throws Exception {
        Path maps = Path.of("/proc/" + p.pid() + "/maps");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            if (!Files.exists(maps) || Files.readString(maps).contains(arena.toString())) {
                return; // no /proc to look at: go ahead
            }
            Thread.sleep(20);
        }
        throw new AssertionError("consumer " + p.pid() + " never mapped " + arena + "; stderr: " + p.stderr());
    }
}
