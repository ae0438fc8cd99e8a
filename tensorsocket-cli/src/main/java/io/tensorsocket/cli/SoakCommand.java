package io.tensorsocket.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code tensorsocket soak}: one producer process and a changing population of consumer processes, for a
 * bounded time, with faults injected at random: joins, clean leaves, SIGKILLs, SIGSTOP/SIGCONT stalls and
 * producer kills followed by a restart under the same name. Every consumer verifies each sample it gets
 * (the {@code consume} command); this harness checks what they report, how long survivors stalled, and
 * that the producer leaks no file descriptor, thread or file. Prints one summary JSON line; exits 1 if
 * anything was lost or leaked.
 */
@Command(name = "soak", mixinStandardHelpOptions = true,
        description = "Fault-injection soak: random joins, leaves, kills, stalls and producer restarts; prints a summary.")
final class SoakCommand implements Callable<Integer> {

    @Option(names = "--minutes", defaultValue = "3", description = "How long to run (default ${DEFAULT-VALUE}).")
    double minutes;

    @Option(names = "--seed", description = "Random seed (default: random; printed in the summary).")
    Long seed;

    @Option(names = "--max-consumers", defaultValue = "4", description = "Consumers alive at most (default ${DEFAULT-VALUE}).")
    int maxConsumers;

    @Option(names = "--producer-restarts", defaultValue = "2",
            description = "Times the producer is SIGKILLed and restarted under the same name (default ${DEFAULT-VALUE}).")
    int producerRestarts;

    @Option(names = "--stall-timeout-s", defaultValue = "2",
            description = "The producer's stall timeout: the documented bound for a stalled peer (default ${DEFAULT-VALUE}).")
    double stallTimeoutS;

    private static final String NAME = "soak";
    private static final int SAMPLES = 3000;
    private static final int LOADER_BATCH = 16;
    private static final int[] BATCH_SIZES = {1, 7, 16, 33, 64, 100};
    /** Documented: a consumer notices a dead producer within a second; JVM exit comes on top. */
    private static final long PRODUCER_GONE_BOUND_MS = 3000;

    private Path base;
    private Random random;
    private Child producer;
    private final List<Child> consumers = new ArrayList<>();
    private final List<String> failures = new ArrayList<>();
    private long t0;
    private int consumerIds;

    // counters
    private int joins;
    private int cleanLeaves;
    private int kills;
    private int stalls;
    private int evictions;
    private int restarts;
    private int toldProducerGone;
    private int refusedWhileDown;
    private long epochsVerified;
    private long epochStartEpochs;
    private long rollingEpochs;
    private long samplesVerified;
    private long samplesLost;
    private long defects;
    private long worstResumeAfterKillMs;
    private long worstExitAfterProducerKillMs;
    private long fdLeak;
    private long threadLeak;
    private long filesLeft;

    @Override
    public Integer call() throws Exception {
        long s = seed != null ? seed : new Random().nextLong();
        random = new Random(s);
        Path shm = Path.of("/dev/shm");
        base = Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")),
                "tensorsocket-soak-");
        t0 = System.nanoTime();
        long end = t0 + (long) (minutes * 60e9);
        try {
            run(end);
        } finally {
            for (Child c : consumers) {
                c.destroy();
            }
            if (producer != null) {
                producer.destroy();
            }
            deleteTree(base);
        }
        boolean ok = failures.isEmpty() && samplesLost == 0 && defects == 0 && fdLeak == 0 && threadLeak == 0 && filesLeft == 0;
        System.out.println(Json.object().put("event", "soak").put("ok", ok).put("seed", s)
                .put("seconds", (System.nanoTime() - t0) / 1e9).put("joins", joins).put("clean_leaves", cleanLeaves)
                .put("kills", kills).put("stalls", stalls).put("evictions", evictions).put("producer_restarts", restarts)
                .put("consumers_told_producer_gone", toldProducerGone)
                .put("consumers_refused_while_down", refusedWhileDown).put("epochs_verified", epochsVerified)
                .put("epoch_start_epochs", epochStartEpochs).put("rolling_epochs", rollingEpochs)
                .put("samples_verified", samplesVerified).put("samples_lost", samplesLost).put("defects", defects)
                .put("worst_resume_after_kill_ms", worstResumeAfterKillMs)
                .put("worst_exit_after_producer_kill_ms", worstExitAfterProducerKillMs)
                .put("stall_timeout_ms", (long) (stallTimeoutS * 1000)).put("fd_leak", fdLeak).put("thread_leak", threadLeak)
                .put("files_left", filesLeft).put("failures", String.join("; ", failures)));
        System.out.flush();
        return ok ? 0 : 1;
    }

    private void run(long end) throws Exception {
        long[] restartAt = new long[producerRestarts];
        for (int i = 0; i < producerRestarts; i++) {
            restartAt[i] = t0 + (end - t0) * (i + 1) / (producerRestarts + 1);
        }
        int nextRestart = 0;
        Baseline baseline = startProducer();
        while (System.nanoTime() < end && failures.isEmpty()) {
            reap();
            if (nextRestart < restartAt.length && System.nanoTime() >= restartAt[nextRestart]) {
                nextRestart++;
                restartProducer();
                baseline = startProducer();
                continue;
            }
            List<Child> running = consumers.stream().filter(c -> c.isAlive() && !c.stopped).toList();
            int action = random.nextInt(10);
            if (running.size() < 2 || (action < 4 && consumers.size() < maxConsumers)) {
                join();
            } else if (action < 6) {
                kill(running.get(random.nextInt(running.size())));
            } else if (action < 8) {
                stall(running.get(random.nextInt(running.size())));
            } // else: let them run
            sleepMs(300 + random.nextInt(900));
        }
        // Wind down: wake stalled consumers, stop the unbounded ones, let the bounded ones finish.
        for (Child c : consumers) {
            if (c.stopped) {
                c.signal("CONT");
                c.stopped = false;
            }
        }
        for (Child c : List.copyOf(consumers)) {
            if (c.isAlive() && c.epochs == 0) {
                c.destroy();
                c.expectedDeath = true;
            }
        }
        long drain = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (consumers.stream().anyMatch(Child::isAlive) && System.nanoTime() < drain) {
            sleepMs(100);
        }
        reap();
        if (!consumers.isEmpty()) {
            failures.add(consumers.size() + " consumers did not finish within 60 s of the end");
            return;
        }
        checkLeaks(baseline);
        producer.signal("TERM");
        if (!producer.process.waitFor(30, TimeUnit.SECONDS)) {
            failures.add("the producer did not stop within 30 s of SIGTERM");
        }
        try (Stream<Path> left = Files.walk(base)) {
            Path producers = base.resolve("producers");
            List<Path> files = left.filter(p -> !p.equals(base) && !p.equals(producers)).toList();
            filesLeft = files.size();
            if (!files.isEmpty()) {
                failures.add("files left behind: " + files);
            }
        }
    }

    // ------------------------------------------------------------------------------------------ producer

    private record Baseline(long fds, long threads) {
    }

    /** Starts the producer, runs one warm-up consumer through an epoch, and records its descriptors and threads. */
    private Baseline startProducer() throws Exception {
        producer = Child.start(base, null, "serve", "--name", NAME, "--synthetic",
                "samples=" + SAMPLES + ",shape=3x8x8,dtype=float32,seed=" + random.nextInt(1000), "--batch-size",
                Integer.toString(LOADER_BATCH), "--epochs", "0", "--rubber-band", "24", "--stall-timeout-s",
                Double.toString(stallTimeoutS), "--idle-timeout-s", "600", "--hello-timeout-s", "5");
        if (producer.awaitLine(l -> l.contains("\"ready\""), 30_000) == null) {
            throw new IllegalStateException("the producer did not start: " + producer.stderrText());
        }
        Child warmup = startConsumer(16, 1);
        if (!warmup.process.waitFor(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the warm-up consumer did not finish an epoch: " + warmup.stderrText());
        }
        reap();
        return new Baseline(awaitStable(this::producerFds), nonCarrierThreads(producer.pid()));
    }

    private void restartProducer() throws Exception {
        for (Child c : consumers) {
            if (c.stopped) {
                c.signal("CONT");
                c.stopped = false;
            }
        }
        // Make sure some consumers are mid-stream when the producer dies.
        while (consumers.stream().filter(c -> c.isAlive() && c.epochs == 0).count() < 2) {
            startConsumer(BATCH_SIZES[random.nextInt(BATCH_SIZES.length)], 0);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (consumers.stream().anyMatch(c -> c.isAlive() && c.epochs == 0 && c.progressCount() == 0)
                && System.nanoTime() < deadline) {
            sleepMs(20);
        }
        List<Child> attached = consumers.stream().filter(Child::isAlive).toList();
        long killedAt = System.nanoTime();
        producer.destroy();
        restarts++;
        for (Child c : attached) {
            c.expectProducerGone = true;
            if (!c.process.waitFor(10, TimeUnit.SECONDS)) {
                failures.add("consumer " + c.id + " still running 10 s after the producer was killed");
                c.destroy();
                continue;
            }
            long ms = (c.exitedAt() - killedAt) / 1_000_000;
            worstExitAfterProducerKillMs = Math.max(worstExitAfterProducerKillMs, ms);
            if (ms > PRODUCER_GONE_BOUND_MS) {
                failures.add("consumer " + c.id + " took " + ms + " ms to notice the producer's death");
            }
        }
        reap();
    }

    private long producerFds() {
        try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(producer.pid()), "fd"))) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    /** Threads of a process, not counting the carrier threads the JDK keeps for virtual threads. */
    private static long nonCarrierThreads(long pid) {
        try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            return s.filter(t -> {
                try {
                    return !Files.readString(t.resolve("comm")).startsWith("ForkJoinPool");
                } catch (IOException e) {
                    return false;
                }
            }).count();
        } catch (IOException e) {
            return -1;
        }
    }

    private long awaitStable(java.util.function.LongSupplier value) {
        long last = value.getAsLong();
        for (int i = 0; i < 50; i++) {
            sleepMs(100);
            long now = value.getAsLong();
            if (now == last) {
                return now;
            }
            last = now;
        }
        return last;
    }

    private void checkLeaks(Baseline b) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long fds;
        while ((fds = producerFds()) != b.fds() && System.nanoTime() < deadline) {
            sleepMs(100);
        }
        fdLeak = fds - b.fds();
        if (fdLeak != 0) {
            failures.add("the producer holds " + fds + " file descriptors after everyone left, " + b.fds() + " before");
        }
        long threads;
        while ((threads = nonCarrierThreads(producer.pid())) > b.threads() && System.nanoTime() < deadline) {
            sleepMs(100);
        }
        threadLeak = Math.max(0, threads - b.threads());
        if (threadLeak != 0) {
            failures.add("the producer runs " + threads + " threads after everyone left, " + b.threads() + " before");
        }
        long connections = connectionThreads(producer.pid());
        if (connections > 0) {
            threadLeak += connections;
            failures.add(connections + " connection threads of the producer outlived their consumers");
        }
    }

    /** Virtual connection threads alive in the producer, from a thread dump (0 where jcmd is unavailable). */
    private long connectionThreads(long pid) {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        Path dump = base.resolve("threads.json");
        try {
            Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "Thread.dump_to_file", "-format=json",
                    dump.toString()).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0 || !Files.exists(dump)) {
                return 0;
            }
            String json = Files.readString(dump);
            Files.delete(dump);
            return json.split("\"tensorsocket-conn\"", -1).length - 1;
        } catch (IOException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    // ------------------------------------------------------------------------------------------ consumers

    private Child startConsumer(int batchSize, int epochs) throws IOException {
        List<String> args = new ArrayList<>(List.of("consume", "--name", NAME, "--batch-size", Integer.toString(batchSize),
                "--progress-ms", "50", "--step-ms", batchSize == 1 ? "0" : Double.toString(0.5 + random.nextInt(4) * 0.5),
                "--batch-timeout-s", "60"));
        if (epochs > 0) {
            args.addAll(List.of("--epochs", Integer.toString(epochs)));
        }
        Child c = Child.start(base, ++consumerIds, args.toArray(String[]::new));
        c.epochs = epochs;
        c.batchSize = batchSize;
        consumers.add(c);
        joins++;
        return c;
    }

    private void join() throws IOException {
        int epochs = random.nextInt(3) == 0 ? 0 : 1 + random.nextInt(3);
        startConsumer(BATCH_SIZES[random.nextInt(BATCH_SIZES.length)], epochs);
    }

    private void kill(Child victim) throws InterruptedException {
        List<Child> survivors = consumers.stream().filter(c -> c != victim && c.isAlive() && !c.stopped
                && c.progressCount() > 0).toList();
        long[] before = survivors.stream().mapToLong(Child::samples).toArray();
        long killedAt = System.nanoTime();
        victim.expectedDeath = true;
        victim.destroy();
        kills++;
        // Survivors must carry on at once; a stalled (SIGSTOPped) peer may hold them up to the stall timeout.
        boolean stalledPeer = consumers.stream().anyMatch(c -> c.stopped);
        long bound = stalledPeer ? (long) (stallTimeoutS * 1000) + 2000 : 2000;
        for (int i = 0; i < survivors.size(); i++) {
            Child s = survivors.get(i);
            long deadline = killedAt + TimeUnit.MILLISECONDS.toNanos(bound + 3000);
            while (s.samples() <= before[i] && s.isAlive() && !s.finishedEpochs() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            if (!s.isAlive() || s.finishedEpochs()) {
                continue;
            }
            long ms = (s.progressAfter(before[i]) - killedAt) / 1_000_000;
            if (s.samples() <= before[i]) {
                ms = (System.nanoTime() - killedAt) / 1_000_000;
            }
            if (!stalledPeer) {
                worstResumeAfterKillMs = Math.max(worstResumeAfterKillMs, ms);
            }
            if (ms > bound) {
                failures.add("consumer " + s.id + " made no progress for " + ms + " ms after consumer " + victim.id + " was killed");
            }
        }
    }

    private void stall(Child c) throws IOException, InterruptedException {
        c.signal("STOP");
        c.stopped = true;
        stalls++;
        long ms = 200 + random.nextInt((int) (stallTimeoutS * 1500));
        Thread.ofPlatform().daemon().start(() -> {
            sleepMs(ms);
            synchronized (c) {
                if (c.stopped) {
                    try {
                        c.signal("CONT");
                    } catch (IOException | InterruptedException ignored) {
                        // gone
                    }
                    c.stopped = false;
                }
            }
        });
    }

    /** Collects exited consumers and checks what they reported. */
    private void reap() {
        for (Child c : List.copyOf(consumers)) {
            if (c.isAlive()) {
                continue;
            }
            consumers.remove(c);
            try {
                c.reader.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            check(c);
            c.deleteFiles();
        }
    }

    private void check(Child c) {
        for (String line : c.lines) {
            if (!line.startsWith("{\"epoch\"")) {
                continue;
            }
            Map<String, String> e = JsonLine.parse(line);
            long samples = Long.parseLong(e.get("samples"));
            long unique = Long.parseLong(e.get("unique"));
            boolean fromStart = "epoch_start".equals(e.get("start"));
            // A rolling epoch spans two producer epochs, each in its own shuffled order: repeats are expected there.
            long bad = (fromStart ? Long.parseLong(e.get("duplicates")) : 0) + Long.parseLong(e.get("corrupt"))
                    + Long.parseLong(e.get("out_of_order"));
            defects += bad;
            if (bad != 0) {
                failures.add("consumer " + c.id + " (batch " + c.batchSize + "): " + line);
            }
            if ("true".equals(e.get("complete"))) {
                epochsVerified++;
                samplesVerified += unique;
                if (fromStart) {
                    epochStartEpochs++;
                    long lost = SAMPLES - unique;
                    samplesLost += lost;
                    if (lost != 0) {
                        failures.add("consumer " + c.id + " lost " + lost + " samples: " + line);
                    }
                } else {
                    rollingEpochs++;
                }
            }
        }
        int code = c.process.exitValue();
        String err = c.errorLine();
        if (c.expectProducerGone) {
            if (code != 0 && err.contains("lost the connection to producer")) {
                toldProducerGone++;
            } else if (code != 0 && c.progressCount() == 0 && c.lines.isEmpty()
                    && (err.contains("is not running") || err.contains("no producer") || err.contains("went away"))) {
                refusedWhileDown++;
            } else if (code != 0 || !c.finishedEpochs()) {
                failures.add("consumer " + c.id + " did not report the producer's death: exit " + code + ", " + err);
            }
        } else if (c.expectedDeath) {
            // killed by us
        } else if (code == 0) {
            cleanLeaves++;
        } else if (err.contains("stall timeout")) {
            evictions++;
        } else {
            failures.add("consumer " + c.id + " (batch " + c.batchSize + ") failed unexpectedly: exit " + code + ", " + err);
        }
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    // ------------------------------------------------------------------------------------------ child JVMs

    /** A {@code tensorsocket} JVM started by the soak: stdout lines with arrival times, stderr in a file. */
    private static final class Child {
        final Process process;
        final Integer id;
        final Path stderr;
        final List<String> lines = new CopyOnWriteArrayList<>();
        /** Progress lines: arrival time and cumulative samples. */
        final List<long[]> progress = new CopyOnWriteArrayList<>();
        final Thread reader;
        volatile boolean stopped;
        boolean expectedDeath;
        boolean expectProducerGone;
        int epochs;
        int batchSize;
        private volatile long exitedAt;

        private Child(Process process, Integer id, Path stderr) {
            this.process = process;
            this.id = id;
            this.stderr = stderr;
            this.reader = Thread.ofPlatform().daemon().start(this::read);
            process.onExit().thenRun(() -> exitedAt = System.nanoTime());
        }

        static Child start(Path base, Integer id, String... args) throws IOException {
            Path err = Files.createTempFile("tensorsocket-soak-", ".err");
            List<String> cmd = new ArrayList<>(Launcher.javaCommand(args));
            cmd.addAll(1, List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData"));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile());
            pb.environment().put("TENSORSOCKET_BASE", base.resolve("producers").toString());
            return new Child(pb.start(), id, err);
        }

        private void read() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    if (l.startsWith("{\"event\": \"progress\"")) {
                        progress.add(new long[]{System.nanoTime(), Long.parseLong(JsonLine.parse(l).get("samples"))});
                    } else {
                        lines.add(l);
                    }
                }
            } catch (IOException ignored) {
                // process gone
            }
        }

        String awaitLine(java.util.function.Predicate<String> p, long timeoutMs) throws InterruptedException {
            long deadline = System.nanoTime() + timeoutMs * 1_000_000;
            while (System.nanoTime() < deadline) {
                for (String l : lines) {
                    if (p.test(l)) {
                        return l;
                    }
                }
                if (!process.isAlive() && !reader.isAlive()) {
                    return null;
                }
                Thread.sleep(20);
            }
            return null;
        }

        long pid() {
            return process.pid();
        }

        boolean isAlive() {
            return process.isAlive();
        }

        int progressCount() {
            return progress.size();
        }

        long samples() {
            return progress.isEmpty() ? 0 : progress.getLast()[1];
        }

        /** When the first progress line beyond {@code samples} arrived. */
        long progressAfter(long samples) {
            for (long[] p : progress) {
                if (p[1] > samples) {
                    return p[0];
                }
            }
            return System.nanoTime();
        }

        boolean finishedEpochs() {
            return epochs > 0 && lines.stream().filter(l -> l.startsWith("{\"epoch\"")).count() >= epochs;
        }

        long exitedAt() {
            long t = exitedAt;
            return t != 0 ? t : System.nanoTime();
        }

        synchronized void signal(String signal) throws IOException, InterruptedException {
            new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start()
                    .waitFor(10, TimeUnit.SECONDS);
        }

        void destroy() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        String stderrText() {
            try {
                return Files.readString(stderr);
            } catch (IOException e) {
                return "";
            }
        }

        String errorLine() {
            return stderrText().lines().filter(l -> l.startsWith("tensorsocket:")).reduce((a, b) -> b).orElse("");
        }

        void deleteFiles() {
            try {
                Files.deleteIfExists(stderr);
            } catch (IOException ignored) {
                // a temp file
            }
        }
    }
}
