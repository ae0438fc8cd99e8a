package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.bench.Harness;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The benchmark commands the README quotes numbers from, run as a user runs them: they finish and print
 * their JSON lines with plausible values. What the numbers are is the benchmarks' business, not a test's, which is
 * why this class runs beside the others instead of alone.
 */
class BenchProcessTest extends ProcessTestBase {

    private static double value(Map<String, String> line, String key) {
        return Double.parseDouble(line.get(key));
    }

    @Test
    void benchHandoffPrintsRingAndSocketLatenciesOfJavaAndPythonConsumers() throws Exception {
        assumePython("numpy");
        Proc p = start(
                "bench",
                "--quick",
                "--only",
                "handoff",
                "--handoff-batches",
                "200",
                "--out",
                base.resolve("out").toString());
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        List<Map<String, String>> lines = p.json().stream()
                .filter(l -> "handoff_us".equals(l.get("metric")))
                .toList();
        // p50 and p99, sleeping and spinning; a Python consumer spins on its ring only
        for (String[] c : new String[][] {
            {"java", "ring", "4"}, {"java", "socket", "4"}, {"python", "ring", "4"}, {"python", "socket", "2"}
        }) {
            List<Map<String, String>> of = lines.stream()
                    .filter(l -> c[0].equals(l.get("consumer")) && c[1].equals(l.get("path")))
                    .toList();
            assertEquals(Integer.parseInt(c[2]), of.size(), String.join("/", c) + ": " + lines);
            for (Map<String, String> l : of) {
                assertTrue(value(l, "value") > 0, l.toString());
                assertEquals("200", l.get("batches"), l.toString());
            }
        }
    }

    @Test
    void aBenchStoppedBySigtermLeavesNoSharedMemoryBehind() throws Exception {
        Set<Path> before = benchDirectories();
        Proc p = start("bench", "--only", "fanout", "--out", base.resolve("out").toString());
        Set<Path> created = new HashSet<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (created.isEmpty() && System.nanoTime() < deadline) { // its slot copy's arena, then its producers'
            created.addAll(benchDirectories());
            created.removeAll(before);
            Thread.sleep(20);
        }
        assertTrue(!created.isEmpty(), "the bench made no directory in /dev/shm: " + p.stderr());
        p.signal("TERM");
        p.exitCode(Duration.ofSeconds(30));
        for (Path d : created) {
            assertTrue(!Files.exists(d), d + " was left behind");
        }
        assertEquals(before, benchDirectories(), "the bench left shared memory behind");
    }

    private static Set<Path> benchDirectories() throws IOException {
        try (var s = Files.list(Path.of("/dev/shm"))) {
            return s.filter(d -> d.getFileName().toString().startsWith("tensorsocket-bench-"))
                    .collect(Collectors.toSet());
        }
    }

    @Test
    void benchFanoutPrintsEachConsumerCountBesideTheMemcpyLimitAndTheSlotCopy() throws Exception {
        Proc p = start(
                "bench",
                "--quick",
                "--only",
                "fanout",
                "--fanout-consumers",
                "1,3",
                "--out",
                base.resolve("out").toString());
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        Map<String, Map<String, String>> first = new LinkedHashMap<>();
        p.json().forEach(l -> first.putIfAbsent(l.get("metric"), l));
        Map<String, String> copy = first.get("memcpy_gb_per_s");
        double memcpy = value(copy, "value");
        // the limit is the faster of the two page sizes, each measured
        assertEquals(
                Math.max(value(copy, "small_pages_gb_per_s"), value(copy, "huge_pages_gb_per_s")),
                memcpy,
                0.01,
                copy.toString());
        assertTrue(
                Math.min(value(copy, "small_pages_gb_per_s"), value(copy, "huge_pages_gb_per_s")) > 0, copy.toString());
        // and the faster of the two copies, the JDK's and the C library's that producers use, each measured
        assertEquals(
                Math.max(value(copy, "jdk_copy_gb_per_s"), value(copy, "c_library_copy_gb_per_s")),
                memcpy,
                0.01,
                copy.toString());
        assertTrue(
                Math.min(value(copy, "jdk_copy_gb_per_s"), value(copy, "c_library_copy_gb_per_s")) > 0,
                copy.toString());
        Map<String, String> slotCopy = first.get("slot_copy_batches_per_s");
        double limit = memcpy / (Harness.FANOUT_BATCH_BYTES / 1e9);
        assertEquals(value(slotCopy, "value") / limit, value(slotCopy, "of_limit"), 0.01, slotCopy.toString());
        // the fastest single copy is at least the mean of all of them
        assertTrue(value(slotCopy, "best_batches_per_s") >= value(slotCopy, "value"), slotCopy.toString());
        // the same copies beside a thread that keeps another CPU busy, with their share of the limit
        assertTrue(value(slotCopy, "beside_busy_cpu_batches_per_s") > 0, slotCopy.toString());
        assertEquals(
                value(slotCopy, "beside_busy_cpu_batches_per_s") / limit,
                value(slotCopy, "beside_busy_cpu_of_limit"),
                0.01,
                slotCopy.toString());
        List<Map<String, String>> fanout = p.json().stream()
                .filter(l -> "fanout_batches_per_s".equals(l.get("metric")))
                .toList();
        assertEquals(
                List.of("1", "3"), fanout.stream().map(l -> l.get("consumers")).toList(), fanout.toString());
        for (Map<String, String> l : fanout) {
            assertTrue(value(l, "value") > 0, l.toString());
            // where the producer's thread spent each batch of its second epoch: copying it above all
            assertTrue(value(l, "producer_copy_ms") > 0, l.toString());
            assertTrue(value(l, "producer_claim_ms") >= 0 && value(l, "producer_publish_ms") > 0, l.toString());
            assertEquals(limit, value(l, "memcpy_limit_batches_per_s"), 0.5, l.toString());
            assertEquals(value(l, "value") / limit, value(l, "of_limit"), 0.01, l.toString());
            assertEquals(value(l, "value") / value(slotCopy, "value"), value(l, "of_slot_copy"), 0.01, l.toString());
        }
        assertTrue(Files.size(base.resolve("out").resolve("fanout.png")) > 0);
    }

    @Test
    void benchShuffleAndLateJoinPrintTheirFiguresBesideTheirReferences() throws Exception {
        Proc p = start(
                "bench",
                "--quick",
                "--only",
                "shuffle,latejoin",
                "--out",
                base.resolve("out").toString());
        assertEquals(0, p.exitCode(Duration.ofMinutes(3)), p.stderr());
        List<Map<String, String>> shift = p.json().stream()
                .filter(l -> "shuffle_position_shift".equals(l.get("metric")))
                .toList();
        assertEquals(5, shift.size(), p.json().toString()); // K = 0, 1, 2, 4, 8
        assertEquals(
                1.0 / 3, value(shift.getFirst(), "value"), 0.01, "a fresh shuffle moves a sample a third of an epoch");
        for (Map<String, String> l : shift) {
            assertTrue(value(l, "value") <= value(l, "fresh_shuffle") + 1e-9, l.toString());
        }
        List<Map<String, String>> exact = p.json().stream()
                .filter(l -> "latejoin_exact_epochs".equals(l.get("metric")))
                .toList();
        assertEquals(4, exact.size(), p.json().toString()); // aligned and random joins, either order
        for (Map<String, String> l : exact) {
            if ("producer".equals(l.get("order")) || "aligned".equals(l.get("joins"))) {
                assertEquals(1.0, value(l, "value"), 1e-9, "every epoch one pass: " + l);
            }
        }
    }

    /** The harness as the README runs it: {@code java ... io.tensorsocket.bench.Harness producer-cpu|fanout ...}. */
    private Proc harness(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                "io.tensorsocket.bench.Harness"));
        cmd.addAll(List.of(args));
        return startCommand(cmd);
    }

    @Test
    void harnessPrintsProducerCpuForBothPathsAndFanout() throws Exception {
        for (String path : List.of("ring", "socket")) {
            Proc p = path.equals("ring") ? harness("producer-cpu", "1") : harness("producer-cpu", "1", "--socket");
            assertEquals(0, p.exitCode(Duration.ofMinutes(2)), p.stderr());
            List<Map<String, String>> lines = p.json();
            assertEquals(1, lines.size(), lines.toString());
            Map<String, String> l = lines.getFirst();
            assertEquals("producer_cpu_us_per_batch", l.get("metric"), l.toString());
            assertEquals(path, l.get("path"), l.toString());
            assertEquals("1", l.get("consumers"), l.toString());
            for (String key : List.of("value", "producer_thread_us", "release_reader_us")) {
                assertTrue(value(l, key) > 0, key + " in " + l);
            }
        }
        Proc fanout = harness("fanout", "1");
        assertEquals(0, fanout.exitCode(Duration.ofMinutes(2)), fanout.stderr());
        List<String> metrics = fanout.json().stream().map(l -> l.get("metric")).toList();
        assertEquals(
                List.of("memcpy_gb_per_s", "slot_copy_batches_per_s", "fanout_batches_per_s"),
                metrics,
                fanout.json().toString());
        for (Map<String, String> l : fanout.json()) {
            assertTrue(value(l, "value") > 0, fanout.json().toString());
        }
    }

    @Test
    void benchFlightPrintsEveryCaseAndRefusesABadShape() throws Exception {
        // small batches: the cases' machinery is the same, and they warm up in a fraction of the time
        // and warm-ups of at most 3 s: the JIT takes twenty seconds to go quiet on small batches
        Proc p = start(
                "bench-flight",
                "--seconds",
                "1",
                "--only",
                "tcp,flight,relay",
                "--sample-shape",
                "1x28x28",
                "--max-warm-up",
                "3");
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        assertTrue(
                p.lines().getFirst().contains("batch 64x1x28x28 float32 (0.20 MB)"),
                p.lines().toString());
        List<Map<String, String>> lines = p.json();
        List<String> cases = lines.stream()
                .map(l -> l.get("case") + "/" + l.get("consumers"))
                .toList();
        assertEquals(List.of("memcpy/0", "tcp/1", "flight/1", "flight/4", "relay/4"), cases, lines.toString());
        for (Map<String, String> l : lines) {
            assertTrue(value(l, "gb_per_s_per_consumer") > 0, l.toString());
            assertTrue(value(l, "cpu_ms_per_consumer_batch") > 0, l.toString());
            if (!l.get("case").equals("memcpy")) { // at least 1 s (tcp) or 2 s; the first batches, then at most 3 s
                double warm = value(l, "warmup_s");
                assertTrue(warm >= (l.get("case").equals("tcp") ? 1 : 2) && warm < 30, l.toString());
            }
            if (l.get("case").equals("flight") || l.get("case").equals("relay")) {
                // each remote case beside the limit of the same run: its share of the plain TCP pair, both rates
                // and the share printed to 3 decimals (so the share lies between the ratios of their rounding bounds)
                double share = value(l, "of_tcp_limit");
                double rate = value(l, "gb_per_s_per_consumer");
                double tcp = value(lines.get(1), "gb_per_s_per_consumer");
                double half = 0.0005;
                assertTrue(
                        share >= (rate - half) / (tcp + half) - half && share <= (rate + half) / (tcp - half) + half,
                        "of_tcp_limit " + share + " against " + rate + " / " + tcp + ": " + l);
            }
        }
        Proc negative = start("bench-flight", "--max-warm-up", "-1");
        assertEquals(2, negative.exitCode(Duration.ofSeconds(30)), negative.stderr());
        assertTrue(negative.stderr().contains("--max-warm-up takes seconds, 0 or more, not -1.0"), negative.stderr());
        Proc bad = start("bench-flight", "--sample-shape", "3x0x2");
        assertEquals(2, bad.exitCode(Duration.ofSeconds(30)), bad.stderr());
        assertTrue(
                bad.stderr()
                        .contains("--sample-shape: a shape is its dimensions, each at least 1, joined by x, such as"
                                + " 3x32x32, not '3x0x2'"),
                bad.stderr());
    }

    @Test
    void benchFeederPrintsEachSourceBesideTheBareCopyOfTheSameRun() throws Exception {
        assumePython("numpy", "torch");
        // the launcher and class path of this build: a clean build runs its tests before it packages the jar
        Proc p = startPython(
                Map.of(),
                pythonClient().resolve("examples/bench_feeder.py").toString(),
                "--batches",
                "4",
                "--consumers",
                "1",
                "--shapes",
                "3x32x32",
                "--launcher",
                launcherScript().toString(),
                "--classpath",
                System.getProperty("java.class.path"));
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        List<Map<String, String>> lines = p.json();
        assertEquals(
                List.of("java", "python"),
                lines.stream().map(l -> l.get("source")).toList(),
                lines.toString());
        for (Map<String, String> l : lines) {
            assertEquals("java", l.get("consumer"), l.toString());
            assertTrue(value(l, "value") > 0, l.toString());
            // rounded to 0.1 batches/s and to 0.001 of the copy: the printed share is the printed rate over the copy's
            assertEquals(
                    value(l, "value") / value(l, "bare_copy_batches_per_s"),
                    value(l, "of_bare_copy"),
                    0.002,
                    l.toString());
        }
    }

    @Test
    void benchCopyOutPrintsAPythonConsumersRateBesideItsCopiesAlone() throws Exception {
        assumePython("numpy");
        Proc p = startPython(
                Map.of(),
                pythonClient().resolve("examples/bench_copy_out.py").toString(),
                "--batches",
                "10",
                "--shape",
                "3x32x32",
                "--runs",
                "2",
                "--launcher",
                launcherScript().toString());
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        List<Map<String, String>> lines = p.json();
        assertEquals(2, lines.size(), lines.toString());
        for (Map<String, String> l : lines) {
            assertEquals(10, value(l, "batches"), l.toString());
            assertTrue(value(l, "batches_per_s") > 0, l.toString());
            assertTrue(value(l, "copy_only_batches_per_s") > 0, l.toString());
            assertTrue(value(l, "gap_p99_ms") >= value(l, "gap_p50_ms"), l.toString());
            assertTrue(List.of("2 MiB", "4 KiB").contains(l.get("arena_pages")), l.toString());
        }
    }

    /**
     * bench_remote.py with one trainer of 1x28x28 batches for 1 s after 1 s of warm-up, this build's launcher, and
     * Debian's python3 as the peer's Python (it has no tensorflow: the peer's rows are skipped, saying so).
     */
    private Proc benchRemote(String... more) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                pythonClient().resolve("examples/bench_remote.py").toString(),
                "--seconds",
                "1",
                "--warm-seconds",
                "1",
                "--consumers",
                "1",
                "--shapes",
                "1x28x28",
                "--peer-python",
                PYTHON,
                "--launcher",
                launcherScript().toString()));
        args.addAll(List.of(more));
        return startPython(Map.of(), args.toArray(String[]::new));
    }

    @Test
    void benchRemoteMeasuresPythonAndJavaRemoteConsumersAndSaysWhenThePeerIsMissing() throws Exception {
        assumePython("numpy", "pyarrow.flight");
        // Debian's python3 has no tensorflow: the peer's rows are skipped, saying so; this project's rows run
        Proc p = benchRemote("--java-consumers", "--classpath", System.getProperty("java.class.path"));
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        assertTrue(
                p.stderr().contains("SKIPPED the tf.data service rows: " + PYTHON + " cannot import tensorflow"),
                p.stderr());
        List<Map<String, String>> lines = p.json();
        assertEquals(
                List.of("python", "java"),
                lines.stream().map(l -> l.get("trainers")).toList(),
                lines.toString());
        for (Map<String, String> l : lines) {
            assertEquals("tensorsocket flight", l.get("side"), l.toString());
            assertEquals("64x1x28x28", l.get("shape"), l.toString());
            assertTrue(value(l, "batches_per_s_per_consumer") > 0, l.toString());
            assertTrue(value(l, "cpu_ms_per_batch") > 0, l.toString());
            double share = value(l, "server_cpu_share");
            assertTrue(share > 0 && share < 1, l.toString());
        }
    }

    @Test
    void benchRemoteFeedsItsServerFromAPythonFeederWhenAsked() throws Exception {
        assumePython("numpy", "pyarrow.flight", "torch");
        Proc p = benchRemote("--feeder");
        assertEquals(0, p.exitCode(Duration.ofMinutes(4)), p.stderr());
        List<Map<String, String>> lines = p.json();
        assertEquals(1, lines.size(), lines.toString());
        Map<String, String> l = lines.getFirst();
        assertEquals("tensorsocket flight + python feeder", l.get("side"), l.toString());
        assertTrue(value(l, "batches_per_s_per_consumer") > 0, l.toString());
        // the server's share counts the feeder's process beside the producer's JVM
        double share = value(l, "server_cpu_share");
        assertTrue(share > 0 && share < 1, l.toString());
    }

    @Test
    void benchRemoteSaysWhyWhenTheServerExitsBeforeListening() throws Exception {
        assumePython("numpy", "pyarrow.flight");
        // a launcher that fails the way a launcher without a JDK 25 does: a message on stderr, a non-zero code
        Path launcher = base.resolve("broken-launcher");
        Files.writeString(launcher, "#!/bin/sh\necho 'tensorsocket: needs Java 25' >&2\nexit 2\n");
        launcher.toFile().setExecutable(true);
        Proc p = startPython(
                Map.of(),
                pythonClient().resolve("examples/bench_remote.py").toString(),
                "--seconds",
                "1",
                "--warm-seconds",
                "1",
                "--consumers",
                "1",
                "--shapes",
                "1x28x28",
                "--peer-python",
                PYTHON,
                "--launcher",
                launcher.toString());
        assertEquals(1, p.exitCode(Duration.ofMinutes(2)), p.stderr());
        assertTrue(
                p.stderr().contains("the server exited (code 2) before listening:\ntensorsocket: needs Java 25"),
                p.stderr());
    }
}
