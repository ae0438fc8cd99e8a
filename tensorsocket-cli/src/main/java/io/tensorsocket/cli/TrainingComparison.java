package io.tensorsocket.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Runs the same K training jobs ({@link JobCommand}) twice: each with its own private pipeline, then all
 * sharing one producer ({@code serve}; with a decoded-sample cache where {@link Config#cacheMb} asks for one). Every job and the producer are separate JVMs; their CPU time is
 * taken over the measured window only (jobs report their own; the producer's is read from the OS at
 * the window's start and end).
 */
final class TrainingComparison {

    /** What to run. */
    record Config(
            Path images,
            int jobs,
            int batchSize,
            int loaderBatchSize,
            double stepMs,
            double seconds,
            double warmupS,
            int workers,
            String decoder,
            String transform,
            String output,
            long seed,
            String model,
            long cacheMb) {
        /** The same, with the shared producer's decoded-sample cache of {@code mib} MiB (0: none). */
        Config withCacheMb(long mib) {
            return new Config(
                    images,
                    jobs,
                    batchSize,
                    loaderBatchSize,
                    stepMs,
                    seconds,
                    warmupS,
                    workers,
                    decoder,
                    transform,
                    output,
                    seed,
                    model,
                    mib);
        }

        List<String> sourceArgs() {
            return List.of(
                    "--images",
                    images.toString(),
                    "--workers",
                    Integer.toString(workers),
                    "--decoder",
                    decoder,
                    "--transform",
                    transform,
                    "--output",
                    output,
                    "--seed",
                    Long.toString(seed));
        }
    }

    /** One job's measured window. */
    record JobResult(
            int job,
            double samplesPerS,
            long samples,
            double seconds,
            double cpuS,
            double waitS,
            double workS,
            long outOfOrder,
            String crc,
            long firstPosition) {}

    /** One mode: its jobs, the producer's CPU (0 in private mode), totals. */
    record ModeResult(String mode, List<JobResult> jobs, double producerCpuS) {
        double aggregate() {
            return jobs.stream().mapToDouble(JobResult::samplesPerS).sum();
        }

        long samples() {
            return jobs.stream().mapToLong(JobResult::samples).sum();
        }

        double cpuS() {
            return producerCpuS + jobs.stream().mapToDouble(JobResult::cpuS).sum();
        }

        /** CPU milliseconds per sample delivered, over every process of this mode. */
        double cpuMsPerSample() {
            return samples() == 0 ? Double.NaN : cpuS() * 1000 / samples();
        }

        double waitShare() {
            double w = jobs.stream().mapToDouble(JobResult::waitS).sum();
            double k = jobs.stream().mapToDouble(JobResult::workS).sum();
            return w + k > 0 ? w / (w + k) : Double.NaN;
        }

        boolean inOrder() {
            return jobs.stream().allMatch(j -> j.outOfOrder() == 0);
        }

        ModeResult withProducerCpu(Job producer) {
            return new ModeResult(mode, jobs, Math.max(0, producer.cpuAtEnd - producer.cpuAtStart) / 1e9);
        }
    }

    private static final List<String> QUIET = List.of("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");

    private TrainingComparison() {}

    static ModeResult runPrivate(Config c) throws Exception {
        List<Job> jobs = new ArrayList<>();
        try {
            for (int i = 0; i < c.jobs(); i++) {
                List<String> args = new ArrayList<>(jobArgs(c));
                args.add("--private");
                args.addAll(c.sourceArgs());
                jobs.add(Job.start(i + 1, args));
            }
            return new ModeResult("private", collect(jobs, c, null), 0);
        } finally {
            jobs.forEach(Job::close);
        }
    }

    static ModeResult runShared(Config c) throws Exception {
        Path shm = Path.of("/dev/shm");
        Path tmp = Files.createTempDirectory(
                Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "tensorsocket-demo-");
        Path dir = tmp.resolve("shared");
        List<Job> jobs = new ArrayList<>();
        Job producer = null;
        try {
            List<String> serve = new ArrayList<>(List.of(
                    "serve",
                    "--dir",
                    dir.toString(),
                    "--batch-size",
                    Integer.toString(c.loaderBatchSize()),
                    "--epochs",
                    "0",
                    "--min-consumers",
                    Integer.toString(c.jobs()),
                    "--idle-timeout-s",
                    "60"));
            serve.addAll(c.sourceArgs());
            if (c.cacheMb() > 0) {
                serve.addAll(List.of("--cache-mb", Long.toString(c.cacheMb())));
            }
            producer = Job.start(0, serve);
            producer.await(l -> l.contains("\"ready\""), Duration.ofSeconds(60), "the shared producer to start");
            for (int i = 0; i < c.jobs(); i++) {
                List<String> args = new ArrayList<>(jobArgs(c));
                args.addAll(List.of("--dir", dir.toString()));
                jobs.add(Job.start(i + 1, args));
            }
            return new ModeResult(c.cacheMb() > 0 ? "cached" : "shared", collect(jobs, c, producer), 0)
                    .withProducerCpu(producer);
        } finally {
            jobs.forEach(Job::close);
            if (producer != null) {
                producer.close();
            }
            try (Stream<Path> s = Files.walk(tmp)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static List<String> jobArgs(Config c) {
        List<String> args = new ArrayList<>(List.of(
                "job",
                "--batch-size",
                Integer.toString(c.batchSize()),
                "--step-ms",
                Double.toString(c.stepMs()),
                "--seconds",
                Double.toString(c.seconds()),
                "--warmup-s",
                Double.toString(c.warmupS())));
        if (c.model() != null) {
            args.addAll(List.of("--model", c.model()));
        }
        return args;
    }

    /** Waits for every job's result; reads the producer's CPU time when all are warm and when all are done. */
    private static List<JobResult> collect(List<Job> jobs, Config c, Job producer) throws Exception {
        Duration limit = Duration.ofSeconds((long) (c.seconds() + c.warmupS() + 120));
        for (Job j : jobs) {
            j.await(l -> l.contains("\"warm\""), limit, "job " + j.index + " to warm up");
        }
        if (producer != null) {
            producer.cpuAtStart = producer.cpuNanos();
        }
        List<JobResult> out = new ArrayList<>();
        for (Job j : jobs) {
            Map<String, String> f =
                    JsonLine.parse(j.await(l -> l.contains("\"done\""), limit, "job " + j.index + " to finish"));
            out.add(new JobResult(
                    j.index,
                    Double.parseDouble(f.get("samples_per_s")),
                    Long.parseLong(f.get("samples")),
                    Double.parseDouble(f.get("seconds")),
                    Double.parseDouble(f.get("cpu_s")),
                    Double.parseDouble(f.get("wait_s")),
                    Double.parseDouble(f.get("work_s")),
                    Long.parseLong(f.get("out_of_order")),
                    f.get("first_samples_crc"),
                    Long.parseLong(f.get("first_position"))));
        }
        if (producer != null) {
            producer.cpuAtEnd = producer.cpuNanos();
        }
        return out;
    }

    /** A child JVM whose stdout lines are collected and whose stderr goes to a file for error messages. */
    static final class Job implements AutoCloseable {
        final int index;
        final Process process;
        final Path stderr;
        final List<String> lines = new CopyOnWriteArrayList<>();
        long cpuAtStart;
        long cpuAtEnd;

        private Job(int index, Process process, Path stderr) {
            this.index = index;
            this.process = process;
            this.stderr = stderr;
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader r =
                        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String l; (l = r.readLine()) != null; ) {
                        lines.add(l);
                    }
                } catch (IOException ignored) {
                    // the process ended
                }
            });
        }

        static Job start(int index, List<String> args) throws IOException {
            Path err = Files.createTempFile("tensorsocket-job-", ".err");
            Process p = new ProcessBuilder(Launcher.javaCommand(QUIET, args.toArray(String[]::new)))
                    .redirectError(err.toFile())
                    .start();
            return new Job(index, p, err);
        }

        String await(Predicate<String> match, Duration timeout, String what) throws Exception {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                for (String l : lines) {
                    if (match.test(l)) {
                        return l;
                    }
                }
                if (!process.isAlive()) {
                    process.waitFor(1, TimeUnit.SECONDS);
                    Thread.sleep(100); // let the reader drain
                    for (String l : lines) {
                        if (match.test(l)) {
                            return l;
                        }
                    }
                    throw new IllegalStateException("while waiting for " + what + ", process exited with "
                            + process.exitValue() + ": " + lastError());
                }
                Thread.sleep(50);
            }
            throw new IllegalStateException(
                    "timed out after " + timeout.toSeconds() + " s waiting for " + what + "; " + lastError());
        }

        String lastError() {
            try {
                return Files.readAllLines(stderr).stream()
                        .filter(l -> !l.isBlank())
                        .reduce((a, b) -> b)
                        .orElse("(no error output)");
            } catch (IOException e) {
                return "(no error output)";
            }
        }

        long cpuNanos() {
            return process.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
        }

        @Override
        public void close() {
            try {
                // a job that reported its result exits by itself (and cleans up); give it a moment first
                if (index > 0 && lines.stream().anyMatch(l -> l.contains("\"done\""))) {
                    process.waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(5, TimeUnit.SECONDS);
                }
                Files.deleteIfExists(stderr);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException ignored) {
                // a temp file left behind
            }
        }
    }
}
