package io.tensorsocket.cli;

import io.tensorsocket.directory.ProducerDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tensorsocket soak}: one producer process and a changing population of consumer processes, for a
 * bounded time, with faults injected at random: joins, clean leaves, SIGKILLs, SIGSTOP/SIGCONT stalls and
 * producer kills followed by a restart under the same name. Every consumer verifies each sample it gets
 * (the {@code consume} command); this harness checks what they report, how long survivors stalled, and
 * that the producer leaks no file descriptor, thread or file. Prints one summary JSON line; exits 1 if
 * anything was lost or leaked.
 */
@Command(
        name = "soak",
        mixinStandardHelpOptions = true,
        description =
                "Fault-injection soak: random joins, leaves, kills, stalls and producer restarts; prints a summary.")
final class SoakCommand implements Callable<Integer> {

    @Option(names = "--minutes", defaultValue = "3", description = "How long to run (default ${DEFAULT-VALUE}).")
    double minutes;

    @Option(names = "--seed", description = "Random seed (default: random; printed in the summary).")
    Long seed;

    @Option(
            names = "--max-consumers",
            defaultValue = "4",
            description = "Consumers alive at most (default ${DEFAULT-VALUE}).")
    int maxConsumers;

    @Option(
            names = "--producer-restarts",
            defaultValue = "2",
            description =
                    "Times the producer is SIGKILLed and restarted under the same name (default ${DEFAULT-VALUE}).")
    int producerRestarts;

    @Option(
            names = "--stall-timeout-s",
            defaultValue = "2",
            description =
                    "The producer's stall timeout: the documented bound for a stalled peer (default ${DEFAULT-VALUE}).")
    double stallTimeoutS;

    private static final String NAME = "soak";
    private static final int SAMPLES = 3000;
    private static final int LOADER_BATCH = 16;
    private static final int[] BATCH_SIZES = {1, 7, 16, 33, 64, 100};
    /** Documented: a consumer notices a dead producer within a second; JVM exit comes on top. */
    private static final long PRODUCER_GONE_BOUND_MS = 3000;

    private Path base;
    private Random random;
    private SoakChild producer;
    private final List<SoakChild> consumers = new ArrayList<>();
    private final SoakVerdict verdict = new SoakVerdict();
    private long t0;
    private int consumerIds;

    @Override
    public Integer call() throws Exception {
        long s = seed != null ? seed : new Random().nextLong();
        random = new Random(s);
        Path shm = Path.of("/dev/shm");
        base = Files.createTempDirectory(
                Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "tensorsocket-soak-");
        t0 = System.nanoTime();
        long end = t0 + (long) (minutes * 60e9);
        try {
            run(end);
        } finally {
            for (SoakChild c : consumers) {
                c.destroy();
            }
            if (producer != null) {
                producer.destroy();
            }
            deleteTree(base);
        }
        boolean ok = verdict.ok();
        System.out.println(verdict.summary(s, (System.nanoTime() - t0) / 1e9, (long) (stallTimeoutS * 1000)));
        System.out.flush();
        return ok ? 0 : 1;
    }

    private void run(long end) throws Exception {
        SoakSchedule schedule = new SoakSchedule(random, t0, end, producerRestarts, maxConsumers);
        LeakProbe baseline = startProducer();
        while (System.nanoTime() < end && verdict.failures.isEmpty()) {
            reap();
            if (schedule.restartDue(System.nanoTime())) {
                restartProducer();
                baseline = startProducer();
                continue;
            }
            List<SoakChild> running =
                    consumers.stream().filter(c -> c.isAlive() && !c.stopped).toList();
            switch (schedule.next(running.size(), consumers.size(), System.nanoTime())) {
                case JOIN -> join();
                case KILL -> kill(running.get(random.nextInt(running.size())));
                case STALL -> stall(running.get(random.nextInt(running.size())));
                case WAIT -> {} // let them run
            }
            sleepMs(schedule.pauseMs());
        }
        // Wind down: wake stalled consumers, stop the unbounded ones, let the bounded ones finish.
        for (SoakChild c : consumers) {
            if (c.stopped) {
                c.signal("CONT");
                c.stopped = false;
            }
        }
        for (SoakChild c : List.copyOf(consumers)) {
            if (c.isAlive() && c.epochs == 0) {
                c.destroy();
                c.expectedDeath = true;
            }
        }
        long drain = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (consumers.stream().anyMatch(SoakChild::isAlive) && System.nanoTime() < drain) {
            sleepMs(100);
        }
        reap();
        if (!consumers.isEmpty()) {
            verdict.failures.add(consumers.size() + " consumers did not finish within 60 s of the end");
            return;
        }
        LeakProbe.Leaks leaks = baseline.check();
        verdict.fdLeak = leaks.fds();
        verdict.threadLeak = leaks.threads();
        verdict.failures.addAll(leaks.problems());
        producer.signal("TERM");
        if (!producer.process.waitFor(30, TimeUnit.SECONDS)) {
            verdict.failures.add("the producer did not stop within 30 s of SIGTERM");
        }
        try (Stream<Path> left = Files.walk(base)) {
            Path producers = SoakChild.producers(base);
            List<Path> files =
                    left.filter(p -> !p.equals(base) && !p.equals(producers)).toList();
            verdict.filesLeft = files.size();
            if (!files.isEmpty()) {
                verdict.failures.add("files left behind: " + files);
            }
        }
    }

    // ------------------------------------------------------------------------------------------ producer

    /** Starts the producer, runs one warm-up consumer through an epoch, and records its descriptors and threads. */
    private LeakProbe startProducer() throws Exception {
        producer = SoakChild.start(
                base,
                null,
                "serve",
                "--name",
                NAME,
                "--synthetic",
                "samples=" + SAMPLES + ",shape=3x8x8,dtype=float32,seed=" + random.nextInt(1000),
                "--batch-size",
                Integer.toString(LOADER_BATCH),
                "--epochs",
                "0",
                "--rubber-band",
                "24",
                "--stall-timeout-s",
                Double.toString(stallTimeoutS),
                "--idle-timeout-s",
                "600",
                "--hello-timeout-s",
                "5");
        if (producer.awaitLine(l -> l.contains("\"ready\""), 30_000) == null) {
            throw new IllegalStateException("the producer did not start: " + producer.stderrText());
        }
        SoakChild warmup = startConsumer(16, 1);
        if (!warmup.process.waitFor(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the warm-up consumer did not finish an epoch: " + warmup.stderrText());
        }
        reap();
        return LeakProbe.baseline(
                producer.pid(), SoakChild.producers(base).resolve(NAME).resolve(ProducerDirectory.SOCKET_FILE), base);
    }

    private void restartProducer() throws Exception {
        for (SoakChild c : consumers) {
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
        List<SoakChild> attached = consumers.stream().filter(SoakChild::isAlive).toList();
        long killedAt = System.nanoTime();
        producer.destroy();
        verdict.restarts++;
        for (SoakChild c : attached) {
            c.expectProducerGone = true;
            if (!c.process.waitFor(10, TimeUnit.SECONDS)) {
                verdict.failures.add("consumer " + c.id + " still running 10 s after the producer was killed");
                c.destroy();
                continue;
            }
            long ms = (c.exitedAt() - killedAt) / 1_000_000;
            verdict.worstExitAfterProducerKillMs = Math.max(verdict.worstExitAfterProducerKillMs, ms);
            if (ms > PRODUCER_GONE_BOUND_MS) {
                verdict.failures.add("consumer " + c.id + " took " + ms + " ms to notice the producer's death");
            }
        }
        reap();
    }

    // ------------------------------------------------------------------------------------------ consumers

    private SoakChild startConsumer(int batchSize, int epochs) throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "consume",
                "--name",
                NAME,
                "--batch-size",
                Integer.toString(batchSize),
                "--progress-ms",
                "50",
                "--step-ms",
                batchSize == 1 ? "0" : Double.toString(0.5 + random.nextInt(4) * 0.5),
                "--batch-timeout-s",
                "60"));
        if (epochs > 0) {
            args.addAll(List.of("--epochs", Integer.toString(epochs)));
        }
        SoakChild c = SoakChild.start(base, ++consumerIds, args.toArray(String[]::new));
        c.epochs = epochs;
        c.batchSize = batchSize;
        consumers.add(c);
        verdict.joins++;
        return c;
    }

    private void join() throws IOException {
        int epochs = random.nextInt(3) == 0 ? 0 : 1 + random.nextInt(3);
        startConsumer(BATCH_SIZES[random.nextInt(BATCH_SIZES.length)], epochs);
    }

    private void kill(SoakChild victim) throws InterruptedException {
        List<SoakChild> survivors = consumers.stream()
                .filter(c -> c != victim && c.isAlive() && !c.stopped && c.progressCount() > 0)
                .toList();
        long[] before = survivors.stream().mapToLong(SoakChild::samples).toArray();
        long killedAt = System.nanoTime();
        victim.expectedDeath = true;
        victim.destroy();
        verdict.kills++;
        // Survivors must carry on at once; a stalled (SIGSTOPped) peer may hold them up to the stall timeout.
        boolean stalledPeer = consumers.stream().anyMatch(c -> c.stopped);
        long bound = stalledPeer ? (long) (stallTimeoutS * 1000) + 2000 : 2000;
        for (int i = 0; i < survivors.size(); i++) {
            SoakChild s = survivors.get(i);
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
                verdict.worstResumeAfterKillMs = Math.max(verdict.worstResumeAfterKillMs, ms);
            }
            if (ms > bound) {
                verdict.failures.add("consumer " + s.id + " made no progress for " + ms + " ms after consumer "
                        + victim.id + " was killed");
            }
        }
    }

    private void stall(SoakChild c) throws IOException, InterruptedException {
        c.signal("STOP");
        c.stopped = true;
        c.stalled = true;
        verdict.stalls++;
        long ms = 200L + random.nextInt((int) (stallTimeoutS * 1500));
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
        for (SoakChild c : List.copyOf(consumers)) {
            if (c.isAlive()) {
                continue;
            }
            consumers.remove(c);
            try {
                c.reader.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            verdict.judge(c, SAMPLES);
            c.deleteFiles();
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
}
