package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Descriptor rings with real processes, where there are fewer rings than consumers: the consumer without
 * one is served over its socket beside the one with a ring, and a ring given again after an eviction stops
 * its evicted owner rather than handing it the newer consumer's batches.
 */
class RingHandoffProcessTest extends ProcessTestBase {

    @Test
    void aConsumerBeyondTheRingsIsServedOverItsSocketBesideOneWithARing() throws Exception {
        serve("few", "samples=1000,shape=4,dtype=int32,seed=5", 16, 2, "--rings", "1", "--min-consumers", "2");
        Proc a = consume("few", 16);
        Proc b = consume("few", 24);
        Set<String> handoffs = new TreeSet<>();
        for (Proc c : List.of(a, b)) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            assertEquals(2, c.json().size(), c.json().toString());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, 1000, "epoch_start");
                handoffs.add(e.get("handoff"));
            }
        }
        assertEquals(Set.of("ring", "socket"), handoffs);
    }

    @Test
    void anEvictedConsumerWhoseRingWentToANewerOneStopsWithItsEviction() throws Exception {
        Proc producer = serve(
                "reuse", "samples=3000,shape=8,dtype=float32,seed=9", 10, 0, "--rings", "1", "--stall-timeout-s", "1");
        Proc evicted = consume("reuse", 10, "--step-ms", "1", "--progress-ms", "1");
        evicted.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30)); // it streams through the ring
        evicted.signal("STOP");
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!producer.stderr().contains("evicting") && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(producer.stderr().contains("evicting"), producer.stderr());
            Proc newer = consume("reuse", 10, "--epochs", "1", "--wait-for-epoch-start");
            assertEquals(0, newer.exitCode(Duration.ofSeconds(60)), newer.stderr());
            List<Map<String, String>> epochs = newer.json();
            assertEquals(1, epochs.size(), epochs.toString());
            assertExactEpoch(epochs.getFirst(), 3000, "epoch_start");
            assertEquals("ring", epochs.getFirst().get("handoff"), "the newer consumer got the one ring");
        } finally {
            evicted.signal("CONT");
        }
        assertNotEquals(0, evicted.exitCode(Duration.ofSeconds(30)));
        String err = evicted.errorLine();
        assertTrue(err.contains("stall timeout"), err);
        for (Map<String, String> e : evicted.json()) {
            if (e.containsKey("epoch")) {
                assertEquals("0", e.get("corrupt"), e.toString());
                assertEquals("0", e.get("out_of_order"), e.toString());
            }
        }
    }
}
