package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
import java.util.TreeMap;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The ranks of data-parallel jobs, each in its own process (Java and Python in one job), launched in the same second
 * as plain consumers: each rank's epochs are its equal share, the job's ranks together see every sample of each epoch
 * once (the last ones twice where the world size does not divide the epoch), everyone saw the same sample at every
 * stream position; a SIGKILLed rank fails its job with a message naming it while the others read on; ranks that
 * disagree, repeat a rank, come late or never come are refused or failed with a message saying what to do.
 */
class RanksProcessTest extends ProcessTestBase {
    private static final int SAMPLES = 1002; // 4 ranks of 251, the last 2 samples of each epoch seen twice

    @Test
    void aJobOfFourRanksInJavaAndPythonAndTwoPlainConsumersAllGetExactEpochs() throws Exception {
        Proc producer =
                serve("ddp", "samples=" + SAMPLES + ",shape=3,dtype=float32,seed=9", 20, 0, "--loader-delay-ms", "1");
        List<Path> idFiles = new ArrayList<>();
        rankFiles.clear();
        List<Proc> ranks = new ArrayList<>();
        boolean python = pythonAvailable();
        // All launched at once, as torchrun and a sweep would: the job's ranks in any order, plain consumers among
        // them.
        ranks.add(javaRank(3, 16, idFiles));
        Proc plain = reader(32, idFiles);
        ranks.add(python ? pythonRank(1, 10, idFiles) : javaRank(1, 10, idFiles));
        ranks.add(javaRank(0, 7, idFiles));
        ranks.add(python ? pythonRank(2, 25, idFiles) : javaRank(2, 25, idFiles));
        Proc plain2 = reader(50, idFiles);

        for (Proc r : ranks) {
            assertEquals(0, r.exitCode(Duration.ofSeconds(90)), r.stderr());
            List<Map<String, String>> epochs = r.json();
            assertEquals(3, epochs.size(), epochs.toString());
            for (Map<String, String> e : epochs) {
                assertExactEpoch(e, 251);
                assertEquals("ddp-job", e.get("job"), e.toString());
                assertEquals("4", e.get("world_size"), e.toString());
            }
        }
        for (Proc p : List.of(plain, plain2)) {
            assertEquals(0, p.exitCode(Duration.ofSeconds(90)), p.stderr());
            for (Map<String, String> e : p.json()) {
                assertExactEpoch(e, SAMPLES);
            }
        }
        assertJobCovers(idFiles, SAMPLES, 3, 2);
        assertTrue(producer.stderr().contains("job 'ddp-job' formed: its 4 ranks start together"), producer.stderr());
    }

    @Test
    void aRankKilledFailsItsJobNamingItWhileOtherConsumersReadOn() throws Exception {
        Proc producer = serve("kill", "samples=2000,shape=3,dtype=float32,seed=2", 20, 0, "--loader-delay-ms", "3");
        Proc plain = consume("kill", 40);
        List<Proc> ranks = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            ranks.add(consume(
                    "kill",
                    16,
                    "--job",
                    "j",
                    "--rank",
                    Integer.toString(r),
                    "--world-size",
                    "3",
                    "--progress-ms",
                    "100",
                    "--wait-for-epoch-start"));
        }
        ranks.get(1).awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(60));
        // status shows each rank of the job
        Proc json = start("status", "kill", "--once", "--json");
        assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
        String all = String.join("\n", json.lines());
        for (int r = 0; r < 3; r++) {
            assertTrue(all.contains("\"job\": \"j\", \"rank\": " + r + ", \"world_size\": 3"), all);
        }
        assertTrue(all.contains("\"job\": null, \"rank\": 0, \"world_size\": 1"), all); // the plain consumer
        Proc text = start("status", "kill", "--once");
        assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
        assertTrue(String.join("\n", text.lines()).contains("j 1/3"), String.join("\n", text.lines()));
        long killedPid = ranks.get(1).pid();
        killMidEpoch("kill", ranks.get(1), 2000);
        for (int r : new int[] {0, 2}) {
            Proc p = ranks.get(r);
            assertNotEquals(0, p.exitCode(Duration.ofSeconds(30)), p.stderr());
            assertTrue(
                    p.stderr()
                            .contains("rank 1 of job 'j' (pid " + killedPid + ") left producer 'kill' without saying"
                                    + " goodbye"),
                    p.stderr());
            assertTrue(p.stderr().contains("restart all of its ranks"), p.stderr());
        }
        // The plain consumer reads on: two more epochs after the job failed, each exact.
        int epochsBefore = plain.json().size();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (plain.json().size() < epochsBefore + 2 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertTrue(plain.isAlive(), plain.stderr());
        assertTrue(plain.json().size() >= epochsBefore + 2, plain.json().toString());
        for (Map<String, String> e : plain.json()) {
            assertExactEpoch(e, 2000);
        }
        assertTrue(producer.isAlive(), producer.stderr());
        // The job's name is free again: a new job of that name forms and reads, joining mid-stream (exact where it
        // joins mid-epoch) while the plain consumer reads on; together its ranks see each epoch once.
        rankFiles.clear();
        List<Path> ids = new ArrayList<>();
        List<Proc> again = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Path f = base.resolve("again-" + r);
            ids.add(f);
            rankFiles.add(f);
            again.add(consume(
                    "kill",
                    16,
                    "--job",
                    "j",
                    "--rank",
                    Integer.toString(r),
                    "--world-size",
                    "2",
                    "--epochs",
                    "2",
                    "--ids-out",
                    f.toString()));
        }
        for (Proc p : again) {
            assertEquals(0, p.exitCode(Duration.ofSeconds(60)), p.stderr());
            for (Map<String, String> e : p.json()) {
                assertExactEpoch(e, 1000);
            }
        }
        assertJobCovers(ids, 2000, 2, 0);
    }

    @Test
    void aTorchrunJobTrainsWithDistributedDataParallelOnItsRanksShares() throws Exception {
        // Debian's torch 1.13 cannot run torchrun under Python 3.11 (its redirect setting is lost); the torch 2.x
        // interpreter .ci/run installs can.
        String torch2 = System.getenv("TENSORSOCKET_TORCH2_PYTHON");
        Assumptions.assumeTrue(
                torch2 != null && Files.isExecutable(Path.of(torch2)),
                "SKIPPED: no torch 2.x interpreter for torchrun (set TENSORSOCKET_TORCH2_PYTHON, as .ci/run does)");
        Proc producer = serve("torchrun", "samples=1000,shape=8,dtype=float32,seed=4", 20, 0, "--loader-delay-ms", "1");
        Proc plain = consume("torchrun", 50, "--epochs", "3");
        // torchrun starts one process per rank with RANK and WORLD_SIZE set; the script names only the job.
        Proc job = startPython(
                torch2,
                Map.of("OMP_NUM_THREADS", "1"),
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node",
                "2",
                pythonClient().resolve("tests/scripts/ddp_train.py").toString(),
                "--name",
                "torchrun",
                "--job",
                "ddp",
                "--epochs",
                "2",
                "--batch-size",
                "25",
                "--no-close"); // as DataLoader scripts end: the loader left open
        assertEquals(0, job.exitCode(Duration.ofMinutes(3)), job.stderr());
        List<Map<String, String>> epochs = job.json();
        assertEquals(2, epochs.size(), job.lines().toString());
        for (Map<String, String> e : epochs) {
            assertEquals("1000", e.get("samples"), e.toString());
            assertEquals("1000", e.get("unique"), e.toString()); // each sample once, across the two ranks
            assertEquals("20", e.get("steps"), e.toString());
        }
        assertEquals(0, plain.exitCode(Duration.ofSeconds(60)), plain.stderr());
        for (Map<String, String> e : plain.json()) {
            assertExactEpoch(e, 1000);
        }
        assertTrue(producer.stderr().contains("job 'ddp' formed: its 2 ranks start together"), producer.stderr());
        // ranks that finished their last epoch and simply ended are no failure of their job
        awaitLog(producer, " without saying goodbye, as a script that simply ends does: not a failure of its job");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (producer.stderr().lines().filter(l -> l.contains(" left (")).count() < 3
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        String log = producer.stderr();
        assertFalse(log.contains("fails with its job") || log.contains("cannot go on"), log);
        assertFalse(job.stderr().contains("JobFailed"), job.stderr());
    }

    @Test
    void ranksThatDisagreeRepeatComeLateOrNeverComeAreToldWhatToDo() throws Exception {
        Proc producer = serve(
                "bad",
                "samples=400,shape=2,dtype=float32,seed=1",
                10,
                0,
                "--loader-delay-ms",
                "2",
                "--job-timeout-s",
                "8");
        Proc anchor = consume("bad", 10);
        awaitJoined(producer, 1);

        // Rank 0 of 2 waits; a rank that says the world is 3, and a second rank 0, are refused at once.
        Proc waiting = consume("bad", 8, "--job", "a", "--rank", "0", "--world-size", "2", "--epochs", "1");
        awaitLog(producer, "rank 0 of job 'a'");
        Proc wrongWorld = consume("bad", 8, "--job", "a", "--rank", "1", "--world-size", "3");
        Proc twice = consume("bad", 8, "--job", "a", "--rank", "0", "--world-size", "2");
        assertEquals(1, wrongWorld.exitCode(Duration.ofSeconds(30)), wrongWorld.stderr());
        assertTrue(
                wrongWorld.stderr().contains("says the job has 3 ranks, but its ranks 0 say 2"), wrongWorld.stderr());
        assertEquals(1, twice.exitCode(Duration.ofSeconds(30)), twice.stderr());
        assertTrue(twice.stderr().contains("rank 0 of job 'a' joined already"), twice.stderr());
        // Rank 1 never comes: rank 0 is told which rank is missing once the job timeout passes.
        assertEquals(1, waiting.exitCode(Duration.ofSeconds(30)), waiting.stderr());
        assertTrue(
                waiting.stderr()
                        .contains("job 'a' on producer 'bad' did not form: rank 1 of 2 did not join within 8 s"),
                waiting.stderr());

        // A job that runs refuses a rank that comes late (a restarted one).
        Proc r0 = consume("bad", 8, "--job", "b", "--rank", "0", "--world-size", "2", "--step-ms", "2");
        Proc r1 = consume("bad", 8, "--job", "b", "--rank", "1", "--world-size", "2", "--step-ms", "2");
        awaitLog(producer, "job 'b' formed");
        Proc late = consume("bad", 8, "--job", "b", "--rank", "1", "--world-size", "2");
        assertEquals(1, late.exitCode(Duration.ofSeconds(30)), late.stderr());
        assertTrue(late.stderr().contains("job 'b' started already"), late.stderr());
        for (Proc p : List.of(r0, r1)) {
            p.awaitLine(l -> l.contains("\"epoch\""), Duration.ofSeconds(60));
            assertExactEpoch(p.json().getFirst(), 200);
            assertTrue(p.isAlive(), p.stderr());
        }

        // What cannot be a rank is refused before it connects, saying why.
        Proc outside = consume("bad", 8, "--job", "c", "--rank", "4", "--world-size", "4");
        assertEquals(1, outside.exitCode(Duration.ofSeconds(30)), outside.stderr());
        assertTrue(outside.stderr().contains("rank 4 of a world of 4 is invalid"), outside.stderr());
        Proc noRank = startCommand(
                List.of(launcherScript().toString(), "consume", "--name", "bad", "--batch-size", "8", "--job", "c"),
                Map.of("RANK", "", "WORLD_SIZE", ""));
        assertEquals(1, noRank.exitCode(Duration.ofSeconds(30)), noRank.stderr());
        assertTrue(noRank.stderr().contains("--job needs --rank (or RANK in the environment"), noRank.stderr());
        Proc fromEnv = startCommand(
                List.of(
                        launcherScript().toString(),
                        "consume",
                        "--name",
                        "bad",
                        "--batch-size",
                        "8",
                        "--job",
                        "d",
                        "--epochs",
                        "1"),
                Map.of("RANK", "0", "WORLD_SIZE", "1"));
        assertEquals(0, fromEnv.exitCode(Duration.ofSeconds(60)), fromEnv.stderr());
        assertEquals("0", fromEnv.json().getFirst().get("rank"));
        anchor.kill();
    }

    /**
     * Every stream position held one sample for every consumer whose ids are in {@code idFiles} that saw it, and the
     * positions the ranks among them ({@link #rankFiles}) saw cover {@code epochs} epochs of {@code n} from where the
     * job started, each position once but the last {@code pad} of each epoch, twice.
     */
    private void assertJobCovers(List<Path> idFiles, long n, int epochs, int pad) throws IOException {
        Map<Long, Long> stream = new HashMap<>();
        Map<Long, Integer> seenByRanks = new TreeMap<>();
        for (Path f : idFiles) {
            boolean rank = rankFiles.contains(f);
            for (String line : Files.readAllLines(f)) {
                String[] v = line.split(" ");
                long pos = Long.parseLong(v[0]);
                for (int i = 1; i < v.length; i++) {
                    Long other = stream.putIfAbsent(pos + i - 1, Long.valueOf(v[i]));
                    assertTrue(other == null || other.equals(Long.valueOf(v[i])), "position " + (pos + i - 1));
                }
                if (rank) {
                    seenByRanks.merge(pos, 1, Integer::sum);
                }
            }
        }
        long first = seenByRanks.keySet().iterator().next(); // where the job started: rank 0's first sample
        for (long p = first; p < first + epochs * n; p++) {
            long offset = (p - first) % n;
            assertEquals(offset >= n - pad ? 2 : 1, seenByRanks.getOrDefault(p, 0), "ranks' views of position " + p);
        }
        assertEquals(
                epochs * (n + pad),
                seenByRanks.values().stream().mapToInt(Integer::intValue).sum());
    }

    private static void awaitLog(Proc producer, String text) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!producer.stderr().contains(text)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the producer never logged '" + text + "': " + producer.stderr());
            }
            Thread.sleep(20);
        }
    }

    private final Set<Path> rankFiles = new HashSet<>();

    private Proc reader(int batchSize, List<Path> idFiles) throws Exception {
        Path ids = base.resolve("ids-" + idFiles.size());
        idFiles.add(ids);
        return consume("ddp", batchSize, "--ids-out", ids.toString(), "--epochs", "3");
    }

    private Proc javaRank(int rank, int batchSize, List<Path> idFiles) throws Exception {
        Path ids = base.resolve("ids-" + idFiles.size());
        idFiles.add(ids);
        rankFiles.add(ids);
        return consume(
                "ddp",
                batchSize,
                "--ids-out",
                ids.toString(),
                "--epochs",
                "3",
                "--job",
                "ddp-job",
                "--rank",
                Integer.toString(rank),
                "--world-size",
                "4");
    }

    private Proc pythonRank(int rank, int batchSize, List<Path> idFiles) throws Exception {
        Path ids = base.resolve("ids-" + idFiles.size());
        idFiles.add(ids);
        rankFiles.add(ids);
        // torchrun's way: RANK and WORLD_SIZE in the environment
        return startPython(
                Map.of("RANK", Integer.toString(rank), "WORLD_SIZE", "4"),
                "-m",
                "tensorsocket_client",
                "consume",
                "--name",
                "ddp",
                "--batch-size",
                Integer.toString(batchSize),
                "--ids-out",
                ids.toString(),
                "--epochs",
                "3",
                "--job",
                "ddp-job");
    }

    /**
     * SIGKILLs {@code rank} while it is stopped in the middle of an epoch. A rank that dies just after releasing an
     * epoch's last batch is what a script that simply ends after its epochs looks like, which is no failure of its
     * job; a loaded machine once had the kill land there. The ranks start at an epoch start, so a rank is mid-epoch
     * exactly when the position it released up to is no multiple of the epoch.
     */
    private void killMidEpoch(String producer, Proc rank, long samplesPerEpoch) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            rank.signal("STOP");
            Proc json = start("status", producer, "--once", "--json");
            assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
            long position = StatusListCleanProcessTest.consumerObjects(
                            json.lines().getFirst())
                    .stream()
                    .filter(c -> c.get("pid").equals(Long.toString(rank.pid())))
                    .mapToLong(c -> Long.parseLong(c.get("position")))
                    .findFirst()
                    .orElseThrow();
            if (position % samplesPerEpoch != 0) {
                rank.kill();
                return;
            }
            rank.signal("CONT");
            assertTrue(System.nanoTime() < deadline, "the rank never stopped mid-epoch");
            Thread.sleep(30);
        }
    }
}
