package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.TensorProducer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Relays and remote consumers under faults, with real JVMs on loopback: relays started at random times and
 * SIGKILLed under load, remote consumers SIGSTOPped, an upstream SIGKILLed under an idle relay, and what each
 * failure is called.
 */
@Timeout(300)
class RemoteFaultsProcessTest extends ProcessTestBase {
    private static final String DATA = "samples=3000,shape=2x8,dtype=float32,seed=19";
    private static final long SAMPLES = 3000;

    /** The seed of this run's random start and kill times, printed so a failing run can be told apart. */
    private static final long SEED = Long.getLong("tensorsocket.trial.seed", System.nanoTime());

    private static void assertExactEpochs(Proc c, String start) {
        List<Map<String, String>> epochs = c.json();
        assertFalse(epochs.isEmpty(), c.lines() + c.stderr());
        long first = Long.parseLong(epochs.getFirst().get("epoch"));
        for (int i = 0; i < epochs.size(); i++) {
            Map<String, String> e = epochs.get(i);
            assertExactEpoch(e, SAMPLES, start);
            assertEquals(Long.toString(first + i), e.get("epoch"), "epochs are numbered one after another: " + epochs);
            assertEquals(Long.toString(first), e.get("start_epoch"), e.toString());
        }
    }

    @Test
    void relaysStartedAtRandomTimesAndRestartedUnderLoadServeTheUpstreamsEpochsExactly() throws Exception {
        Random random = new Random(SEED);
        System.out.println(
                "RemoteFaultsProcessTest seed " + SEED + " (-Dtensorsocket.trial.seed=" + SEED + " repeats it)");
        int port = freePort();
        Proc up = serve("up", DATA, 50, 0, "--flight", "127.0.0.1:" + port, "--loader-delay-ms", "1");
        // a local consumer keeps the upstream's epochs going, and must not notice anything of what follows
        Proc local = consume("up", 40, "--epochs", "12", "--step-ms", "1");
        awaitJoined(up, 1);
        Thread.sleep(300 + random.nextInt(1500));
        Proc relay = start("serve", "--name", "r", "--from", uri(port, "up"), "--batch-size", "50", "--epochs", "0")
                .awaitReady();
        Proc first = consume("r", 37, "--epochs", "2");
        Proc underLoad = consume("r", 29, "--step-ms", "2");
        assertEquals(0, first.exitCode(Duration.ofSeconds(90)), first.stderr());
        assertExactEpochs(first, "epoch_start");
        long joinedAt = Long.parseLong(first.json().getFirst().get("epoch"));
        Thread.sleep(200 + random.nextInt(800));
        relay.kill();
        assertEquals(1, underLoad.exitCode(Duration.ofSeconds(30)), underLoad.stderr());
        if (!underLoad.json().isEmpty()) {
            assertExactEpochs(underLoad, "epoch_start");
        }
        Thread.sleep(random.nextInt(1000));
        Proc again = start("serve", "--name", "r", "--from", uri(port, "up"), "--batch-size", "50", "--epochs", "0")
                .awaitReady();
        Proc afterRestart = consume("r", 64, "--epochs", "2");
        assertEquals(0, afterRestart.exitCode(Duration.ofSeconds(90)), afterRestart.stderr());
        assertExactEpochs(afterRestart, "epoch_start");
        assertTrue(
                Long.parseLong(afterRestart.json().getFirst().get("epoch")) > joinedAt,
                afterRestart.json().toString());
        assertEquals(0, local.exitCode(Duration.ofMinutes(2)), local.stderr());
        assertExactEpochs(local, "epoch_start");
        assertTrue(again.isAlive(), again.stderr());
    }

    @Test
    void consumersJoiningARelayMidEpochStartExactWhereTheUpstreamKeepsTheirBoundaries() throws Exception {
        Random random = new Random(SEED);
        // Epochs of 368 MB, several times what the upstream can run ahead of the relay (the stream's flow-control
        // window and two arenas of 8 slots), so that most joins find the upstream's next order not drawn yet.
        long samples = 30_000;
        int port = freePort();
        Proc up = serve(
                "up",
                "samples=30000,shape=3x32x32,dtype=float32,seed=23",
                100,
                0,
                "--flight",
                "127.0.0.1:" + port,
                "--slots",
                "8");
        Proc anchor = consume("up", 64, "--step-ms", "1");
        awaitJoined(up, 1);
        Proc relay = start(
                        "serve",
                        "--name",
                        "r",
                        "--from",
                        uri(port, "up"),
                        "--batch-size",
                        "50",
                        "--epochs",
                        "0",
                        "--slots",
                        "8")
                .awaitReady();
        Proc first = consume("r", 37, "--step-ms", "1");
        awaitJoined(relay, 1);
        List<Proc> joiners = new ArrayList<>();
        int[] sizes = {29, 16, 50, 64, 23};
        for (int size : sizes) {
            Thread.sleep(400 + random.nextInt(900));
            joiners.add(consume("r", size, "--epochs", "2"));
        }
        int exact = 0;
        for (int k = 0; k < joiners.size(); k++) {
            Proc j = joiners.get(k);
            assertEquals(0, j.exitCode(Duration.ofMinutes(2)), j.stderr());
            List<Map<String, String>> epochs = j.json();
            assertEquals(2, epochs.size(), j.lines().toString());
            String start = epochs.getFirst().get("start");
            for (Map<String, String> e : epochs) {
                assertExactEpoch(e, samples, start);
            }
            exact += "exact".equals(start) ? 1 : 0;
            // Where a join lands depends on how far the upstream ran ahead (the machine's speed): should none of the
            // five have started exact, up to five more join, one after another, until one does.
            if (exact == 0 && k == joiners.size() - 1 && joiners.size() < 2 * sizes.length) {
                Thread.sleep(400 + random.nextInt(900));
                joiners.add(consume("r", sizes[k % sizes.length], "--epochs", "2"));
            }
        }
        assertTrue(exact > 0, "no joiner of " + joiners.size() + " started exact mid-epoch (seed " + SEED + ")");
        // the upstream is asked once per offset, however many relay consumers joined there
        Matcher m = Pattern.compile("joined at exact \\(epoch \\d+, sample (\\d+)\\)")
                .matcher(relay.stderr());
        Set<String> offsets = new HashSet<>();
        int joinedExact = 0;
        while (m.find()) {
            offsets.add(m.group(1));
            joinedExact++;
        }
        assertEquals(exact, joinedExact, relay.stderr());
        assertEquals(offsets.size(), count(up.stderr(), "keeping its joiner's boundary"), up.stderr());
        Thread.sleep(1000); // the relay lets the boundaries go without waiting
        assertEquals(offsets.size(), count(up.stderr(), "lets its joiner's boundary"), up.stderr());
        assertTrue(first.isAlive() && anchor.isAlive(), first.stderr() + anchor.stderr());
    }

    private static int count(String text, String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void aRelayOfAnUpstreamWithBoundedEpochsServesOnlyTheUpstreamsRemainingOnes() throws Exception {
        int port = freePort();
        Proc up = serve("up", DATA, 50, 5, "--flight", "127.0.0.1:" + port, "--slots", "8");
        Proc local = consume("up", 100, "--epochs", "2");
        assertEquals(0, local.exitCode(Duration.ofSeconds(60)), local.stderr());
        // the upstream pauses early in epoch 2 with nobody attached (its loader ran ahead by up to 8 batches);
        // the relay joins at the next epoch start the upstream still has: 2, or 3
        Proc relay = start("serve", "--name", "r", "--from", uri(port, "up"), "--batch-size", "50", "--epochs", "0")
                .awaitReady();
        Proc c = consume("r", 33);
        assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
        assertExactEpochs(c, "epoch_start");
        long first = Long.parseLong(c.json().getFirst().get("epoch"));
        assertTrue(first == 2 || first == 3, c.json().toString());
        assertEquals(5 - first, c.json().size(), c.json().toString());
        assertEquals(0, relay.exitCode(Duration.ofSeconds(60)), relay.stderr());
        assertEquals(0, up.exitCode(Duration.ofSeconds(60)), up.stderr());
    }

    @Test
    void aRelayThatCannotJoinAtAnEpochStartIsRefusedAtOnceSayingWhy() throws Exception {
        int port = freePort();
        serve("up", DATA, 50, 3, "--flight", "127.0.0.1:" + port, "--slots", "100");
        // The upstream's loader runs ahead into its last epoch while a slow consumer reads the first (its 100 slots
        // hold more than an epoch and a half); a loader does not run on once its last consumer left.
        Proc local = consume("up", 100, "--epochs", "1", "--step-ms", "60");
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (TensorProducer.queryStatus(base.resolve("up"), Duration.ofSeconds(5))
                        .epoch()
                < 2) {
            assertTrue(System.nanoTime() < deadline, "the upstream's loader never reached its last epoch");
            assertTrue(local.isAlive(), "the consumer finished before the loader reached its last epoch");
            Thread.sleep(20);
        }
        assertEquals(0, local.exitCode(Duration.ofSeconds(60)), local.stderr());
        Proc relay = start("serve", "--name", "r", "--from", uri(port, "up"), "--batch-size", "50", "--epochs", "0");
        assertEquals(1, relay.exitCode(Duration.ofSeconds(20)), relay.stderr());
        assertTrue(relay.errorLine().contains("is in its last epoch"), relay.stderr());
        assertFalse(relay.stderr().contains("waiting for server"), relay.stderr());
    }

    @Test
    void anIdleRelayExitsWithinSecondsWhenItsUpstreamIsKilled() throws Exception {
        int port = freePort();
        Proc up = serve("up", DATA, 50, 0, "--flight", "127.0.0.1:" + port);
        Proc relay = start("serve", "--name", "r", "--from", uri(port, "up"), "--batch-size", "50", "--epochs", "0")
                .awaitReady();
        awaitJoined(up, 1);
        Thread.sleep(500);
        long killed = System.nanoTime();
        up.kill();
        assertEquals(1, relay.exitCode(Duration.ofSeconds(20)), relay.stderr());
        long ms = (System.nanoTime() - killed) / 1_000_000;
        System.out.println("idle relay exited " + ms + " ms after its upstream was killed");
        assertTrue(ms < 10_000, "took " + ms + " ms");
        assertTrue(relay.errorLine().contains(uri(port, "up")), relay.stderr());
        assertTrue(relay.errorLine().contains("went away"), relay.stderr());
    }

    @Test
    void remoteConsumersPausedUnderTheStallTimeoutCarryOnExactly() throws Exception {
        int port = freePort();
        Proc up = serve("up", DATA, 50, 0, "--flight", "127.0.0.1:" + port, "--stall-timeout-s", "6");
        Proc java = consume(uri(port, "up"), 40, "--epochs", "4", "--step-ms", "5", "--wait-for-epoch-start");
        Proc python = pythonAvailable() && pyarrowAvailable()
                ? pythonConsume(uri(port, "up"), 40, "--epochs", "4", "--step-ms", "5", "--wait-for-epoch-start")
                : null;
        List<Proc> remotes = python == null ? List.of(java) : List.of(java, python);
        for (Proc r : remotes) {
            r.awaitLine(l -> l.contains("\"epoch\""), Duration.ofSeconds(60));
        }
        for (Proc r : remotes) {
            r.signal("STOP");
        }
        Thread.sleep(3600);
        for (Proc r : remotes) {
            r.signal("CONT");
        }
        for (Proc r : remotes) {
            assertEquals(0, r.exitCode(Duration.ofSeconds(60)), r.stderr());
            assertEquals(4, r.json().size(), r.json().toString());
            assertExactEpochs(r, "epoch_start");
            assertEquals("flight", r.json().getFirst().get("handoff"), r.json().toString());
        }
        // the server probed the paused remotes' links; their answers, read after they went on, are not warned about
        assertFalse(up.stderr().contains("ping ack"), up.stderr());
    }

    /**
     * Stops {@code stalled} until producer {@code up} evicts it, then lets it go on. A fixed stall is not enough for a
     * remote consumer: the server sends ahead up to its flow-control window, and a slow machine may not fill it. The
     * stall timeout is 3 s: with 1 s a consumer on a loaded machine was evicted before it was stopped.
     */
    private String errorAfterAStall(Proc up, Proc stalled) throws Exception {
        Proc local = consume("up", 50, "--epochs", "10");
        stalled.awaitLine(l -> l.contains("\"epoch\""), Duration.ofSeconds(60));
        stalled.signal("STOP");
        Thread.sleep(3500); // past the 3 s stall timeout
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!up.stderr().contains("evicting") && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        stalled.signal("CONT");
        assertEquals(1, stalled.exitCode(Duration.ofSeconds(30)), stalled.stderr());
        assertEquals(0, local.exitCode(Duration.ofSeconds(60)), local.stderr());
        return stalled.errorLine();
    }

    @Test
    void aStalledRemoteConsumerIsToldItWasEvictedAndTheProducerNamesItsPeer() throws Exception {
        int port = freePort();
        Proc up = serve("up", DATA, 50, 0, "--flight", "127.0.0.1:" + port, "--stall-timeout-s", "3", "--slots", "8");
        // no step: after SIGCONT it reads what the server had sent ahead (up to its 64 MiB window) before the
        // eviction that follows it
        String error = errorAfterAStall(up, consume(uri(port, "up"), 40));
        // the producer's own words: that it was disconnected, and what to do; not a vanished server
        assertToldItWasEvicted(error);
        assertFalse(error.contains("went silent"), error);
        assertTrue(
                Pattern.compile("evicting remote consumer \\d+ \\(flight 127\\.0\\.0\\.1:\\d+, batch size 40\\)")
                        .matcher(up.stderr())
                        .find(),
                up.stderr());
    }

    @Test
    void anEvictedPythonConsumerIsToldItWasEvicted() throws Exception {
        Assumptions.assumeTrue(pythonAvailable(), "needs " + PYTHON + " with numpy");
        Proc up = serve("up", DATA, 50, 0, "--stall-timeout-s", "3", "--slots", "8");
        String error = errorAfterAStall(up, pythonConsume("up", 40, "--step-ms", "5"));
        assertToldItWasEvicted(error);
        assertFalse(error.contains("lost the connection") || error.contains("Broken pipe"), error);
    }

    /**
     * The producer's eviction, in its words. Which of its two reasons a stopped consumer meets depends on timing: it
     * held a batch past the stall timeout, or, once the other consumer had read everything and waited, it was moved to
     * a lane of its own and did not answer the move within that timeout. Both say it was disconnected and what to do.
     */
    private static void assertToldItWasEvicted(String error) {
        assertTrue(
                (error.contains("held batch") || error.contains("did not answer its move to lane"))
                        && error.contains("it was disconnected")
                        && error.contains("stall timeout"),
                error);
    }
}
