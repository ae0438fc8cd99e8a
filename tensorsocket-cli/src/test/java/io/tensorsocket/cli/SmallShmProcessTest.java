package io.tensorsocket.cli;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code serve} and {@code share()} where shared memory is as small as in a default Docker container: a real tmpfs
 * (16 or 64 MiB) as TENSORSOCKET_BASE (skipped, saying why, where mounting is not permitted).
 */
class SmallShmProcessTest extends ProcessTestBase {
    private Path shm;
    private String skip;

    /** Mounts a tmpfs of {@code size} (as mount's {@code size=} takes it) for this test. */
    private void mount(String size) throws Exception {
        shm = Files.createDirectory(base.resolve("shm"));
        Process p = new ProcessBuilder(
                        "mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0700", "tmpfs", shm.toString())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), UTF_8).strip();
        if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
            skip = "cannot mount a tmpfs here (" + out + ")";
            System.out.println("SmallShmProcessTest skipped: " + skip);
            shm = null;
        }
        assumeTrue(skip == null, skip);
    }

    @AfterEach
    void unmount() throws Exception {
        if (shm != null) { // lazily: a share's producer may still be on its way out
            new ProcessBuilder("umount", "-l", shm.toString())
                    .inheritIO()
                    .start()
                    .waitFor(20, TimeUnit.SECONDS);
        }
    }

    private Proc serveOnShm(String size, String... args) throws Exception {
        mount(size);
        return Proc.start(shm, args);
    }

    private List<Path> leftovers() throws Exception {
        try (Stream<Path> s = Files.walk(shm)) {
            return s.filter(p -> !p.equals(shm)).toList();
        }
    }

    /** One trial of a sweep sharing producer {@code name} on the tmpfs: {@code share_trial.py NAME extra...}. */
    private Proc trial(String name, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                PYTHON,
                "-u",
                pythonClient().resolve("tests/scripts/share_trial.py").toString(),
                name));
        cmd.addAll(List.of(extra));
        Proc p = Proc.startCommand(
                shm,
                cmd,
                Map.of(
                        "PYTHONPATH",
                        pythonClient() + ":" + pythonClient().resolve("tests/scripts"),
                        "PYTHONDONTWRITEBYTECODE",
                        "1",
                        "OMP_NUM_THREADS",
                        "1",
                        "TENSORSOCKET_LAUNCHER",
                        launcherScript().toString()));
        trials.add(p);
        return p;
    }

    private final List<Proc> trials = new ArrayList<>();

    @AfterEach
    void endTrials() throws Exception {
        for (Proc t : trials) {
            t.close();
        }
    }

    /** The factory's arguments: batches of {@code batch} samples of 3x224x224 float32 (588 KiB each). */
    private static String imagenetSized(int batch) {
        return "{\"samples\": 96, \"shape\": \"3x224x224\", \"batch_size\": " + batch + "}";
    }

    @Test
    void batchesOfTenMegabytesShareInSixtyFourMiBWithClaimsAheadLowered() throws Exception {
        assumePython("numpy", "torch");
        mount("64m");
        // 16 samples: 9.2 MiB a batch. A feeder's 4 claims ahead need 7 slots (65 MiB); 4 slots serve with 1.
        List<Proc> together = new ArrayList<>();
        for (int b : new int[] {16, 24}) {
            together.add(trial(
                    "ten",
                    "--epochs",
                    "2",
                    "--batch-size",
                    Integer.toString(b),
                    "--linger",
                    "2",
                    "--kwargs",
                    imagenetSized(16)));
        }
        together.getFirst().awaitLine(l -> l.contains("\"attached\""), Duration.ofMinutes(2));
        String log = Files.readString(shm.resolve(".ten.share.log")); // kept while the producer runs
        assertTrue(
                log.contains("arena of producer 'ten': 4 slots of ")
                        && log.contains("claims ahead lowered from 4 to 1 so that 4 slots hold the rubber band (2),"
                                + " the claims and one more (the fewest this producer serves from); 64.0 MiB free"),
                log);
        for (Proc t : together) {
            assertEquals(0, t.exitCode(Duration.ofMinutes(2)), t.stderr());
            List<Map<String, String>> lines = t.json();
            assertEquals(3, lines.size(), lines.toString()); // attached, then two exact epochs (the script checks ids)
            for (Map<String, String> e : lines.subList(1, 3)) {
                assertEquals("true", e.get("exact"), e.toString());
            }
        }
        // after its linger: nothing of it on the tmpfs, lock file and log included
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!leftovers().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertEquals(List.of(), leftovers());
    }

    @Test
    void aSlowTrialWhoseLaneWouldNotFitKeepsTheMainStreamAndEveryEpochStaysExact() throws Exception {
        assumePython("numpy", "torch");
        mount("64m");
        // 9.2 MiB batches: the arena's 4 slots leave 27 MiB free, and a lane needs at least 3 slots in half of it.
        // The slow trial holds the fast one back, but rather than a lane failing it for want of memory, it sets the
        // pace: said once, and both trials read every epoch exactly.
        Proc fast =
                trial("slow", "--epochs", "3", "--batch-size", "16", "--linger", "5", "--kwargs", imagenetSized(16));
        Proc slow = trial(
                "slow",
                "--epochs",
                "3",
                "--batch-size",
                "16",
                "--step-ms",
                "300",
                "--linger",
                "5",
                "--kwargs",
                imagenetSized(16));
        for (Proc t : List.of(fast, slow)) {
            assertEquals(0, t.exitCode(Duration.ofMinutes(2)), t.stderr());
            List<Map<String, String>> lines = t.json();
            assertEquals(
                    4, lines.size(), lines.toString()); // attached, then three exact epochs (the script checks ids)
            for (Map<String, String> e : lines.subList(1, 4)) {
                assertEquals("true", e.get("exact"), e.toString());
            }
        }
        String log = Files.readString(shm.resolve(".slow.share.log")); // kept while the producer lingers (5 s)
        assertTrue(
                log.contains("would move consumer")
                        && log.contains("but a lane's arena (")
                        && log.contains("the fewest it serves from) would take more than half of the ")
                        && log.contains("of shared memory free; it sets the pace as without lanes"),
                log);
        assertFalse(log.contains("to lane 1"), log);
        // after its linger: nothing of it on the tmpfs, lock file and log included
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!leftovers().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertEquals(List.of(), leftovers());
    }

    @Test
    void aShareWhoseArenaCannotFitStartsOneProducerAndEveryTrialGetsItsErrorAtOnce() throws Exception {
        assumePython("numpy", "torch");
        mount("64m");
        // 48 samples: 27.6 MiB a batch; even the fewest slots (4: 110 MiB) do not fit in 64 MiB
        List<Proc> together = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            together.add(trial("big", "--epochs", "1", "--batch-size", "48", "--kwargs", imagenetSized(48)));
        }
        for (Proc t : together) { // the first start fails each, as a ShareFailed or as the consumer it became
            assertEquals(1, t.exitCode(Duration.ofMinutes(2)), t.stderr());
            String err = t.stderr();
            assertTrue(err.contains("ShareFailed: ") || err.contains("ProducerFailed: "), err);
            assertTrue(err.contains("not enough shared memory in " + shm.resolve("big") + ": the arena needs "), err);
        }
        // a trial after it is told at once, starting nothing: the space is still short. After: once the failed
        // producer's directory went, which keeps why it failed for a second (a trial in that second is told by it)
        Path failed = shm.resolve("big");
        for (long deadline = System.nanoTime() + 30_000_000_000L; Files.exists(failed); ) {
            assertTrue(System.nanoTime() < deadline, "the failed producer's directory stayed: " + leftovers());
            Thread.sleep(50);
        }
        Proc later = trial("big", "--epochs", "1", "--batch-size", "48", "--kwargs", imagenetSized(48));
        assertEquals(1, later.exitCode(Duration.ofSeconds(30)), later.stderr());
        assertTrue(
                later.stderr()
                        .contains("ShareFailed: the producer for share 'big' (share_loaders:synthetic) cannot start: it"
                                + " failed for lack of shared memory when pid "),
                later.stderr());
        assertTrue(
                later.stderr()
                        .contains("so it was not started again: not enough shared memory in " + shm.resolve("big")),
                later.stderr());
        String log = Files.readString(shm.resolve(".big.share.log"));
        assertEquals(1, log.lines().filter(l -> l.startsWith("--- ")).count(), "one producer started: " + log);
        assertFalse(log.contains("arena of producer 'big'"), "no arena named that cannot fit: " + log);
        // the failure stays readable, nothing else does: no directory, arena or socket
        assertEquals(
                List.of(shm.resolve(".big.share.lock"), shm.resolve(".big.share.log")),
                leftovers().stream().sorted().toList());
    }

    @Test
    void anArenaThatDoesNotFitIsOneLineAndLeavesNothing() throws Exception {
        try (Proc p = serveOnShm(
                "16m",
                "serve",
                "--name",
                "big",
                "--synthetic",
                "samples=1000",
                "--batch-size",
                "64",
                "--arena-mb",
                "64")) {
            assertEquals(1, p.exitCode(Duration.ofSeconds(60)), p.stderr());
            String err = p.stderr();
            assertFalse(err.contains("Exception") || err.contains("\tat "), "no stack trace: " + err);
            assertTrue(
                    p.errorLine()
                            .startsWith("tensorsocket: error: not enough shared memory in " + shm.resolve("big")
                                    + ": the arena needs 66408448 bytes (63.3 MiB) but only "),
                    p.errorLine());
            assertTrue(
                    p.errorLine().contains("--shm-size") && p.errorLine().contains("TENSORSOCKET_BASE"), p.errorLine());
            assertEquals(List.of(), leftovers(), "no arena, lock, socket or directory left behind");
        }
    }

    @Test
    void theDefaultArenaFitsAndServesAConsumer() throws Exception {
        try (Proc p = serveOnShm(
                                "16m",
                                "serve",
                                "--name",
                                "fits",
                                "--synthetic",
                                "samples=640,seed=4",
                                "--batch-size",
                                "64")
                        .awaitReady();
                Proc c = Proc.start(shm, "consume", "--name", "fits", "--batch-size", "32")) {
            assertTrue(
                    p.stderr()
                            .contains("arena of producer 'fits': 10 slots of 772 KiB = 7.5 MiB, because the default"
                                    + " 64 slots (48.3 MiB) would take more than half of the free space"),
                    p.stderr());
            // consume checks every sample's bytes against the synthetic source and fails on any difference
            c.awaitLine(l -> l.contains("\"unique\": 640") && l.contains("\"corrupt\": 0"), Duration.ofSeconds(60));
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            assertEquals(0, p.exitCode(Duration.ofSeconds(60)), p.stderr());
            assertEquals(List.of(), leftovers());
        }
    }
}
