package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * The Tune example, run by the real engine: two ASHA sweeps (one with a Lightning {@code Trainer.fit} trial), each
 * with a local Ray instance of its own, on one host read one producer, every trial's every epoch exact, and nothing is
 * left after the sweeps; on a cluster of two Ray nodes simulated on this machine each node has its producer and each trial reads its own node's, and where
 * one node serves the loader over Flight each node's producer is a relay of it, one network stream per node. A PBT sweep
 * restores trials from mid-epoch checkpoints, and every epoch stays whole across the restores.
 */
@Tag("timed") // runs after the pool: a Ray cluster takes the machine (beside other classes its trials timed out)
@Isolated // and alone among the timed classes
class RayTuneProcessTest extends ProcessTestBase {
    private static final String RAY = System.getenv("TENSORSOCKET_RAY_PYTHON");

    private Proc sweep(String... args) throws Exception {
        Assumptions.assumeTrue(
                RAY != null && Files.isExecutable(Path.of(RAY)),
                "SKIPPED: no Python with ray[tune] and lightning (set TENSORSOCKET_RAY_PYTHON, as .ci/run does)");
        List<String> all = new ArrayList<>(
                List.of(pythonClient().resolve("examples/tune_sweep.py").toString()));
        // A producer outlives the gaps between a sweep's trials by its linger; on a loaded machine Ray may start the
        // next trial more than the example's 10 s after the last one left, and a second producer would then serve
        // the same node. The sweep stops its producers itself at the end, so a long linger costs nothing here.
        all.addAll(List.of("--linger", "120"));
        all.addAll(List.of(args));
        return startPython(
                RAY,
                Map.of(
                        "OMP_NUM_THREADS",
                        "1",
                        "RAY_USAGE_STATS_ENABLED",
                        "0",
                        "TENSORSOCKET_LAUNCHER",
                        launcherScript().toString()),
                all.toArray(String[]::new));
    }

    /** The trial epochs the sweep of 4 trials printed, checked exact; returns them. */
    private static List<Map<String, String>> exactEpochs(Proc p) throws Exception {
        return exactEpochs(p, 4);
    }

    /** The trial epochs the sweep of {@code trials} trials printed, checked exact; returns them. */
    private static List<Map<String, String>> exactEpochs(Proc p, int trials) throws Exception {
        assertEquals(0, p.exitCode(Duration.ofMinutes(5)), p.stderr());
        // stop() at the sweep's end ends each producer's actor as Ray expects: no "worker died" from the raylet
        for (String out : List.of(p.stderr(), String.join("\n", p.lines()))) {
            assertFalse(out.contains("A worker died or was killed"), out);
        }
        List<Map<String, String>> lines = p.json();
        Map<String, String> summary = lines.getLast();
        assertEquals(Integer.toString(trials), summary.get("trials"), summary.toString());
        assertEquals("0", summary.get("errors"), summary.toString());
        List<Map<String, String>> epochs = lines.subList(0, lines.size() - 1);
        assertTrue(epochs.size() >= trials, epochs.toString()); // ASHA stops some trials after their first epoch
        for (Map<String, String> e : epochs) {
            assertEquals("2000", e.get("samples"), e.toString());
            assertEquals("2000", e.get("unique"), e.toString());
            assertTrue(e.get("start").equals("epoch_start") || e.get("start").equals("exact"), e.toString());
        }
        System.out.println("sweep: " + summary.get("wall_s") + " s wall; attach times "
                + epochs.stream().map(e -> e.get("attach_s")).distinct().toList());
        return epochs;
    }

    @Test
    void twoAshaSweepsEachWithItsOwnRayInstanceReadOneProducerAndLeaveNothingBehind() throws Exception {
        // Two drivers on one host, each starting a local Ray instance of its own, launched together: one producer
        // decodes for both, and whichever sweep ends first leaves it to the other's trials.
        Proc first = sweep("--trials", "4", "--epochs", "3", "--lightning");
        Proc second = sweep("--trials", "2", "--epochs", "2");
        List<Map<String, String>> epochs = new ArrayList<>(exactEpochs(first, 4));
        assertTrue(epochs.stream().anyMatch(e -> e.get("kind").equals("lightning")), epochs.toString());
        epochs.addAll(exactEpochs(second, 2));
        Set<String> producers = new HashSet<>();
        epochs.forEach(e -> producers.add(e.get("producer_pid")));
        assertEquals(1, producers.size(), "one producer for both sweeps: " + producers);
        try (var left = Files.list(base)) {
            assertEquals(List.of(), left.toList(), "the producer's directory, lock or log outlived the sweeps");
        }
    }

    @Test
    void aPbtSweepRestoringTrialsFromMidEpochCheckpointsKeepsEveryEpochWhole() throws Exception {
        // PBT pauses the worse trial and restarts it from the better one's checkpoint, taken mid-epoch: the restored
        // trial reads the rest of that epoch (load_state_dict), so every epoch, across restores, is one pass
        // each sample costs the loader 3 ms, so each epoch lasts 3 s at least: the two trials read at the same time
        // however late the second attaches (a sweep of 5 s, the first trial done before the second reported, had PBT
        // compare no one)
        Proc p = sweep("--pbt", "--trials", "2", "--epochs", "2", "--samples", "1000", "--decode-us", "3000");
        assertEquals(0, p.exitCode(Duration.ofMinutes(5)), p.stderr());
        Map<String, String> summary = p.json().getLast();
        assertEquals("0", summary.get("errors"), summary.toString());
        assertEquals("true", summary.get("whole"), p.lines().toString());
        assertTrue(
                Integer.parseInt(summary.get("restored_mid_epoch")) > 0, "PBT restored a trial mid-epoch: " + summary);
        for (Map<String, String> e : p.json().subList(0, p.json().size() - 1)) {
            assertEquals("1000.0", e.get("unique"), e.toString());
        }
    }

    @Test
    void onTwoRayNodesEachNodesTrialsReadTheirNodesProducer() throws Exception {
        assertOneProducerPerNode(exactEpochs(sweep("--trials", "4", "--epochs", "2", "--nodes", "2")));
    }

    @Test
    void onTwoRayNodesReadingOneUpstreamOverFlightEachNodeRelaysItOnOneNetworkStream() throws Exception {
        Proc p = sweep("--trials", "4", "--epochs", "2", "--nodes", "2", "--upstream");
        assertOneProducerPerNode(exactEpochs(p));
        Map<String, String> summary = p.json().getLast();
        assertTrue(summary.get("upstream").startsWith("grpc://127.0.0.1:"), summary.toString());
        // each node's relay is one remote consumer of the upstream, whichever trials ran there: never one per trial.
        // A relay whose node's trials have all ended reads on for no one until its linger ends, so that it never
        // holds the upstream's other readers: at the sweep's end every node's relay is still counted.
        long nodes = p.json().stream()
                .filter(e -> e.containsKey("node"))
                .map(e -> e.get("node"))
                .distinct()
                .count();
        assertEquals(Long.toString(nodes), summary.get("network_streams"), nodes + " nodes: " + summary);
        try (var left = Files.list(base)) {
            assertEquals(
                    List.of(),
                    left.filter(f -> !f.getFileName().toString().startsWith("."))
                            .toList(),
                    "a relay's or the upstream's directory outlived the sweep");
        }
    }

    private static void assertOneProducerPerNode(List<Map<String, String>> epochs) {
        Map<String, Set<String>> pidsByNode = new HashMap<>();
        for (Map<String, String> e : epochs) {
            assertEquals("sweep-images-" + e.get("node"), e.get("producer"), e.toString());
            pidsByNode.computeIfAbsent(e.get("node"), n -> new HashSet<>()).add(e.get("producer_pid"));
        }
        for (Set<String> pids : pidsByNode.values()) {
            assertEquals(1, pids.size(), "one producer per node: " + pidsByNode);
        }
        System.out.println("trials ran on " + pidsByNode.size() + " node(s): " + pidsByNode);
    }
}
