package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Sweeps as sweep engines run them: the same script per trial, with one line that shares the loader. Trials launched
 * in the same second start one producer; later ones, one SIGKILLed on the way, reuse it with exact epochs; it goes
 * after its linger, leaving nothing behind; a producer SIGKILLed under its trials fails them at once and does not
 * block its name; a trial asking for another loader, or whose factory fails, is told how. Java callers
 * ({@code consume --share}) the same.
 */
class ShareProcessTest extends ProcessTestBase {
    /** The factory's arguments every trial of the sweep passes: a sample costs 50 µs to load. */
    private static final String SLOW = "{\"sample_ms\": 0.05}";

    private Proc trial(String name, String... extra) throws Exception {
        List<String> args = new ArrayList<>(
                List.of(pythonClient().resolve("tests/scripts/share_trial.py").toString(), name));
        args.addAll(List.of(extra));
        return startPython(Map.of("OMP_NUM_THREADS", "1"), args.toArray(String[]::new));
    }

    @Override
    protected Proc startPython(Map<String, String> env, String... args) throws IOException {
        // The factories' module sits beside the trial script, as a user's loaders.py beside train.py.
        List<String> cmd = new ArrayList<>(List.of(PYTHON, "-u"));
        cmd.addAll(List.of(args));
        Map<String, String> all = new HashMap<>(env);
        all.put("PYTHONPATH", pythonClient() + ":" + pythonClient().resolve("tests/scripts"));
        all.put("PYTHONDONTWRITEBYTECODE", "1");
        all.putIfAbsent("TENSORSOCKET_LAUNCHER", launcherScript().toString());
        return startCommand(cmd, all);
    }

    @Test
    void trialsLaunchedTogetherAndLaterShareOneProducerWithExactEpochsWhichGoesAfterItsLinger() throws Exception {
        assumePython("numpy", "torch");
        // Four trials in the same second, as a sweep engine launches them; slow steps keep the producer busy, and
        // each waits after its first epoch until the late trials have joined (as slower trials would keep it).
        Path joined = base.resolve("late-joined");
        Path lastLeft = base.resolve("last-left");
        List<Proc> first = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            first.add(trial(
                    "sweep",
                    "--epochs",
                    "3",
                    "--batch-size",
                    Integer.toString(20 + 7 * i),
                    "--linger", // the producer's: the last trials leave, exit and are awaited one by one before "again"
                    // comes, which may take seconds each on a loaded machine
                    "25",
                    "--step-ms",
                    "3",
                    "--hold",
                    joined.toString(),
                    "--kwargs",
                    SLOW));
        }
        // A late trial, one SIGKILLed while it reads (an early-stopped trial's fate), and one that comes within the
        // linger after everyone left: each has imported what it needs before it is let go, so that no start-up time
        // decides the order.
        Path goLate = base.resolve("go-late");
        Proc late = waitingTrial(2, 16, goLate);
        Proc killed = waitingTrial(5, 16, goLate);
        Proc again = waitingTrial(1, 50, lastLeft);
        for (Proc t : List.of(late, killed, again)) {
            t.awaitLine("ready"::equals, Duration.ofMinutes(2));
        }
        first.get(0).awaitLine(l -> l.contains("\"epoch\": 0"), Duration.ofMinutes(2));
        Files.createFile(goLate);
        late.awaitLine(l -> l.contains("\"attached\""), Duration.ofMinutes(1));
        killed.awaitLine(l -> l.contains("\"attached\""), Duration.ofMinutes(1));
        Files.createFile(joined);
        killed.kill();
        // Neither disturbs the share: every epoch of every trial is exact, and one producer served them all.
        Set<String> producers = new HashSet<>();
        for (Proc t : concat(first, List.of(late))) {
            assertEquals(0, t.exitCode(Duration.ofMinutes(3)), t.stderr());
            List<Map<String, String>> lines = t.json();
            producers.add(lines.getFirst().get("producer_pid"));
            for (Map<String, String> e : lines.subList(1, lines.size())) {
                assertEquals("true", e.get("exact"), e.toString());
                assertTrue(
                        e.get("start").equals("epoch_start") || e.get("start").equals("exact"), e.toString());
            }
        }
        assertEquals(1, producers.size(), "one producer for the whole sweep: " + producers);
        // A trial within the linger reuses it too.
        Files.createFile(lastLeft);
        assertEquals(0, again.exitCode(Duration.ofMinutes(2)), again.stderr());
        assertEquals(producers.iterator().next(), again.json().getFirst().get("producer_pid"));
        String log = Files.readString(base.resolve(".sweep.share.log")); // kept while the producer runs
        assertEquals(1, log.lines().filter(l -> l.startsWith("--- ")).count(), "started once: " + log);
        // After its linger the producer and its feeder are gone, and so are its directory, lock file and log.
        long pid = Long.parseLong(producers.iterator().next());
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertFalse(
                ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "the producer outlived its linger");
        assertFalse(Files.exists(base.resolve("sweep")), "its directory stayed");
        assertNothingLeftOf("sweep");
    }

    /** The augmenting trials' linger: long enough for the trial started after them to find their producer. */
    private static final String LINGER = "20";

    @Test
    void trialsThatAugmentDifferentlyShareOneLoaderAndEachEqualsItsPrivatePipeline() throws Exception {
        assumePython("numpy", "torch");
        // Launched together: trials each with its own augmentation strength (applied in its workers, per sample,
        // seeded by its seed, its epoch and the sample's id) over the decoded samples; batch sizes differ too.
        List<Proc> augmenting = List.of(
                trial("augment", "--epochs", "2", "--batch-size", "32", "--augment", "0.1", "--linger", LINGER),
                trial("augment", "--epochs", "2", "--batch-size", "50", "--augment", "0.5", "--linger", LINGER),
                // resumed from its checkpoint: its epochs 5 and 6, as its private pipeline's set_epoch(5) and (6)
                trial(
                        "augment",
                        "--epochs",
                        "2",
                        "--batch-size",
                        "25",
                        "--augment",
                        "0.1",
                        "--linger",
                        LINGER,
                        "--resume-epoch",
                        "5"));
        // A data-parallel trial: its two ranks augment alike, each its half of every epoch.
        List<Proc> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            ranks.add(trial(
                    "augment",
                    "--epochs",
                    "2",
                    "--batch-size",
                    "16",
                    "--augment",
                    "0.3",
                    "--linger",
                    LINGER,
                    "--job",
                    "ddp",
                    "--rank",
                    Integer.toString(r),
                    "--world-size",
                    "2"));
        }
        Set<String> producers = new HashSet<>();
        List<Map<String, String>> epochs = new ArrayList<>();
        long[] rankSamples = new long[2];
        long[] rankIdSums = new long[2];
        for (Proc t : concat(augmenting, ranks)) {
            assertEquals(0, t.exitCode(Duration.ofMinutes(3)), t.stderr());
            List<Map<String, String>> lines = t.json();
            producers.add(lines.getFirst().get("producer_pid"));
            for (Map<String, String> e : lines.subList(1, lines.size())) {
                assertEquals("true", e.get("exact"), e.toString());
                if (augmenting.contains(t)) { // every sample of every epoch: what its private pipeline gives
                    assertEquals("1000", e.get("augmented_equal"), e.toString());
                    epochs.add(e);
                } else if (ranks.contains(t)) {
                    assertEquals(e.get("samples"), e.get("augmented_equal"), e.toString());
                    rankSamples[Integer.parseInt(e.get("epoch"))] += Long.parseLong(e.get("samples"));
                    rankIdSums[Integer.parseInt(e.get("epoch"))] += Long.parseLong(e.get("id_sum"));
                }
            }
        }
        assertEquals(1, producers.size(), "one producer loads for all six: " + producers);
        assertEquals(6, epochs.size(), epochs.toString());
        assertEquals(
                6,
                epochs.stream().map(e -> e.get("digest")).distinct().count(),
                "each trial, each epoch its own augmentation (the resumed trial's epochs 5 and 6 are not the first"
                        + " trial's 0 and 1, though both augment alike): " + epochs);
        for (int e = 0; e < 2; e++) { // the ranks' halves make the whole epoch
            assertEquals(1000, rankSamples[e], "epoch " + e);
            assertEquals(999L * 1000 / 2, rankIdSums[e], "epoch " + e);
        }
        // A trial without augment= wants the factory's own batches, which this producer (lingering) does not serve. The
        // trials' linger outlasts its start on a loaded machine (3 s did not always).
        Proc plain = trial("augment", "--epochs", "2", "--batch-size", "20", "--linger", LINGER);
        assertEquals(1, plain.exitCode(Duration.ofMinutes(1)), plain.stderr());
        assertTrue(
                plain.stderr()
                        .contains("serves the factory's samples decoded, for trials that give augment=, and this"
                                + " trial gives none"),
                plain.stderr());
    }

    @Test
    void aProducerKilledMidEpochFailsItsTrialsAtOnceAndTheNextTrialStartsAFreshOne() throws Exception {
        assumePython("numpy", "torch");
        List<Proc> running = new ArrayList<>();
        for (int b : new int[] {20, 32}) {
            running.add(trial(
                    "oom",
                    "--epochs",
                    "50",
                    "--batch-size",
                    Integer.toString(b),
                    "--linger",
                    "3",
                    "--step-ms",
                    "2",
                    "--kwargs",
                    SLOW));
        }
        for (Proc t : running) {
            t.awaitLine(l -> l.contains("\"epoch\": 0"), Duration.ofMinutes(2));
        }
        // The OOM killer's way: SIGKILL to the producer's JVM, mid-epoch, its directory left as it was.
        String pid = running.getFirst().json().getFirst().get("producer_pid");
        ProcessHandle.of(Long.parseLong(pid)).orElseThrow().destroyForcibly();
        for (Proc t : running) {
            assertEquals(1, t.exitCode(Duration.ofSeconds(30)), t.stderr());
            assertTrue(
                    t.stderr().contains("ProducerGone: lost the connection to producer 'oom' (pid " + pid + ")"),
                    t.stderr());
        }
        // The next trial of the name reclaims the leftovers and starts a producer of its own.
        Proc next = trial("oom", "--epochs", "1", "--batch-size", "50", "--linger", "2");
        assertEquals(0, next.exitCode(Duration.ofMinutes(2)), next.stderr());
        List<Map<String, String>> lines = next.json();
        assertTrue(!lines.getFirst().get("producer_pid").equals(pid), "a fresh producer: " + lines.getFirst());
        assertTrue(
                Double.parseDouble(lines.getFirst().get("seconds")) < 30,
                "attached without waiting out a timeout: " + lines.getFirst());
        assertEquals("true", lines.get(1).get("exact"), lines.get(1).toString());
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (Files.exists(base.resolve("oom")) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertFalse(Files.exists(base.resolve("oom")), "the fresh producer outlived its linger");
        assertNothingLeftOf("oom");
    }

    /** A share that ended cleanly leaves neither its lock file nor its log; its feeder removes them on its way out. */
    private void assertNothingLeftOf(String name) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while ((Files.exists(base.resolve("." + name + ".share.lock"))
                        || Files.exists(base.resolve("." + name + ".share.log")))
                && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertFalse(Files.exists(base.resolve("." + name + ".share.lock")), "its lock file stayed");
        assertFalse(Files.exists(base.resolve("." + name + ".share.log")), "its log stayed");
    }

    @Test
    void aTrialAskingForAnotherLoaderOrWhoseFactoryFailsIsToldHow() throws Exception {
        assumePython("numpy", "torch");
        // reading until it is killed at the end, so that the trials below find its producer however long they take
        Proc running = trial("other", "--epochs", "100000", "--batch-size", "20", "--linger", "3", "--step-ms", "2");
        running.awaitLine(l -> l.contains("\"attached\""), Duration.ofMinutes(2));
        Proc differs = trial("other", "--epochs", "1", "--kwargs", "{\"batch_size\": 64}");
        assertEquals(1, differs.exitCode(Duration.ofMinutes(2)), differs.stderr());
        assertTrue(
                differs.stderr()
                        .contains("ShareMismatch: producer 'other' on this host serves another loader than"
                                + " this trial asks for (share_loaders:synthetic): its arguments differ: batch_size not given there"
                                + " (here 64)"),
                differs.stderr());
        Proc broken = trial("broken", "--factory", "share_loaders:broken");
        assertEquals(1, broken.exitCode(Duration.ofMinutes(2)), broken.stderr());
        assertTrue(
                broken.stderr()
                        .contains("ShareFailed: the producer started for share 'broken'"
                                + " (share_loaders:broken) failed (exit status 1) before it served; its output ("
                                + base.resolve(".broken.share.log") + ") ends:"),
                broken.stderr());
        assertTrue(
                broken.stderr().contains("RuntimeError: the data set's root /data/cifar does not exist"),
                broken.stderr());
        Proc lambda = startPython(Map.of(), "-c", "import tensorsocket_client as t; t.share('x', lambda: None, 8)");
        assertEquals(1, lambda.exitCode(Duration.ofSeconds(60)), lambda.stderr());
        assertTrue(lambda.stderr().contains("share() cannot use <lambda>"), lambda.stderr());
        running.kill();
    }

    @Test
    void javaCallersShareWithConsumeShareAndAreRefusedOtherArguments() throws Exception {
        String serveArgs = "--synthetic samples=2000,shape=4,dtype=float32,seed=3 --batch-size 50 --loader-delay-ms 1";
        List<Proc> consumers = new ArrayList<>();
        Proc anchor = javaShare("--batch-size", "20", "--share", serveArgs, "--linger-s", "3");
        for (int b : new int[] {32, 45, 64}) {
            consumers.add(javaShare(
                    "--batch-size", Integer.toString(b), "--epochs", "2", "--share", serveArgs, "--linger-s", "3"));
        }
        for (Proc c : consumers) {
            assertEquals(0, c.exitCode(Duration.ofMinutes(2)), c.stderr());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, 2000);
            }
        }
        Proc other = javaShare(
                "--batch-size",
                "32",
                "--epochs",
                "1",
                "--share",
                serveArgs.replace("seed=3", "seed=4"),
                "--linger-s",
                "3");
        assertEquals(1, other.exitCode(Duration.ofMinutes(2)), other.stderr());
        assertTrue(
                other.stderr()
                        .contains("producer 'jshare' on this host serves another source than this caller asks"
                                + " for: it was started with serve " + serveArgs + ", this caller asks for serve "
                                + serveArgs.replace("seed=3", "seed=4")),
                other.stderr());
        assertTrue(anchor.isAlive(), anchor.stderr());
        anchor.kill();
        String log = Files.readString(base.resolve(".jshare.share.log"));
        assertEquals(1, log.lines().filter(l -> l.startsWith("--- ")).count(), "started once: " + log);
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (Files.exists(base.resolve("jshare")) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertFalse(Files.exists(base.resolve("jshare")), "the producer outlived its linger: " + log);
        assertNothingLeftOf("jshare");
    }

    /** {@code consume --name jshare args...}, able to start {@code tensorsocket serve} as a user's PATH would. */
    private Proc javaShare(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(launcherScript().toString(), "consume", "--name", "jshare"));
        cmd.addAll(List.of(args));
        return startCommand(
                cmd, Map.of("TENSORSOCKET_LAUNCHER", launcherScript().toString()));
    }

    private static <T> List<T> concat(List<T> a, List<T> b) {
        List<T> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    /** A trial of the sweep that imports what it needs, says "ready" and calls share() only once {@code go} exists. */
    private Proc waitingTrial(int epochs, int batchSize, Path go) throws Exception {
        return trial(
                "sweep",
                "--epochs",
                Integer.toString(epochs),
                "--batch-size",
                Integer.toString(batchSize),
                "--linger",
                "4",
                "--after",
                go.toString(),
                "--kwargs",
                SLOW);
    }
}
