package io.tensorsocket.cli;

import com.sun.management.OperatingSystemMXBean;
import io.tensorsocket.Batch;
import io.tensorsocket.BatchSource;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Unmatched;

/**
 * {@code tensorsocket job}: one simulated training job, as the demo and the benchmark start it. It reads
 * batches either from a shared producer ({@code --name}/{@code --dir}) or from a private pipeline it runs
 * itself ({@code --private} followed by the same source options as {@code serve}), reads every page of
 * each batch, spends {@code --step-ms} per batch standing in for the accelerator's step, and after
 * {@code --seconds} of measurement prints one JSON line: samples/s, CPU time, wait vs work, and whether
 * every sample arrived once and in order.
 */
@Command(
        name = "job",
        hidden = true,
        mixinStandardHelpOptions = true,
        description = "A simulated training job reading from a shared producer or from its own private pipeline.")
final class JobCommand implements Callable<Integer> {

    @Option(names = "--name", description = "Read from the shared producer of this name.")
    String name;

    @Option(names = "--dir", description = "Read from the shared producer in this directory.")
    Path dir;

    @Option(
            names = "--private",
            description = "Run a private pipeline in this process; the remaining options describe its source.")
    boolean privatePipeline;

    @Option(names = "--batch-size", required = true, description = "Samples per training step.")
    int batchSize;

    @Option(
            names = "--step-ms",
            defaultValue = "40",
            description = "Simulated accelerator time per batch (default ${DEFAULT-VALUE}).")
    double stepMs;

    @Option(names = "--seconds", defaultValue = "20", description = "Measured time (default ${DEFAULT-VALUE}).")
    double seconds;

    @Option(
            names = "--warmup-s",
            defaultValue = "3",
            description = "Unmeasured time after the first batch (default ${DEFAULT-VALUE}).")
    double warmupS;

    @Option(names = "--model", description = "Train a real DJL model instead of simulating the step.")
    String model;

    @Option(
            names = "--classes",
            defaultValue = "10",
            description = "Classes of the real model (default ${DEFAULT-VALUE}).")
    int classes;

    @Option(
            names = "--lr",
            defaultValue = "0.001",
            description = "Learning rate of the real model (default ${DEFAULT-VALUE}).")
    float lr;

    @Unmatched
    List<String> sourceArgs = new ArrayList<>();

    /** Holder so the private pipeline's source options parse exactly as {@code serve}'s do. */
    @Command(name = "private-source")
    static final class PrivateSource {
        @Mixin
        SourceOptions source;
    }

    @Override
    public Integer call() throws Exception {
        int targets = (name != null ? 1 : 0) + (dir != null ? 1 : 0) + (privatePipeline ? 1 : 0);
        if (targets != 1) {
            throw new IllegalArgumentException("give exactly one of --name, --dir or --private");
        }
        if (!privatePipeline && !sourceArgs.isEmpty()) {
            throw new IllegalArgumentException("unknown options " + sourceArgs);
        }
        if (model != null) {
            OptionalParts.requireDjl("demo --model");
            Models.loadEngine(); // before any batch is held for this job
        }
        ConsumerOptions opts = ConsumerOptions.batchSize(batchSize).withConnectTimeout(Duration.ofSeconds(60));
        if (!privatePipeline) {
            try (TensorConsumer c =
                    name != null ? TensorConsumer.connect(name, opts) : TensorConsumer.connect(dir, opts)) {
                train(c, "shared");
            }
            return 0;
        }
        PrivateSource ps = new PrivateSource();
        List<String> args = new ArrayList<>(sourceArgs);
        args.addAll(List.of("--batch-size", Integer.toString(batchSize)));
        new CommandLine(ps).parseArgs(args.toArray(String[]::new));
        Path shm = Path.of("/dev/shm");
        Path tmp = Files.createTempDirectory(
                Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "tensorsocket-private-");
        // A signal skips finally blocks: a shutdown hook removes the private arena however the job ends.
        Thread cleanup = new Thread(() -> delete(tmp), "tensorsocket-private-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        BatchSource source = ps.source.build("private");
        try (TensorProducer p = TensorProducer.builder()
                .directory(tmp.resolve("p"))
                .source(source)
                .epochs(0)
                .slots(6)
                .drainTimeout(Duration.ofSeconds(1))
                .build()) {
            Runtime.getRuntime().removeShutdownHook(cleanup);
            cleanup = new Thread(
                    () -> {
                        p.close();
                        delete(tmp);
                    },
                    "tensorsocket-private-cleanup");
            Runtime.getRuntime().addShutdownHook(cleanup);
            p.start();
            try (TensorConsumer c = TensorConsumer.connect(tmp.resolve("p"), opts)) {
                train(c, "private");
            }
        } finally {
            delete(tmp);
        }
        return 0;
    }

    private static void delete(Path tmp) {
        try (Stream<Path> s = Files.walk(tmp)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // already gone
        }
    }

    private static final long HASHED_SAMPLES = 64;
    /** Keeps the page reads from being optimised away. */
    static volatile long sink;

    private void train(TensorConsumer c, String mode) throws InterruptedException {
        try (ModelStep step =
                model == null ? null : new ModelStep(model, classes, c.tensors().getFirst(), "label", batchSize, lr)) {
            run(c, mode, step);
        }
    }

    private void run(TensorConsumer c, String mode, ModelStep step) throws InterruptedException {
        long stepNanos = (long) (stepMs * 1e6);
        long warmupNanos = (long) (warmupS * 1e9);
        long measureNanos = (long) (seconds * 1e9);
        long first = 0;
        long warmAt = 0;
        long warmSamples = 0;
        long warmCpu = 0;
        long warmWait = 0;
        long warmWork = 0;
        long samples = 0;
        long expected = -1;
        long firstPosition = -1;
        long outOfOrder = 0;
        long touched = 0;
        CRC32C crc = new CRC32C();
        long hashed = 0;
        String tensorName = c.tensors().getFirst().name();
        long sampleBytes = c.tensors().getFirst().sampleBytes();
        // the measured window's figures, taken when it closes; the job reads on (without its step) until it has hashed
        // its first samples, so that every job's hash covers the same samples however few it trained on in the window
        WindowEnd end = null;
        boolean done = false;
        while (!done && !c.isEndOfStream()) {
            for (Batch b : c) {
                long now = System.nanoTime();
                if (first == 0) {
                    first = now;
                }
                long pos = c.streamPosition(b);
                if (expected < 0) {
                    firstPosition = pos;
                }
                if (expected >= 0 && pos != expected) {
                    outOfOrder++;
                }
                expected = pos + b.size();
                Tensor t = b.tensor(tensorName);
                MemorySegment data = t.data();
                for (long off = 0; off < data.byteSize(); off += 4096) {
                    touched += data.get(ValueLayout.JAVA_BYTE, off);
                }
                if (hashed < HASHED_SAMPLES) {
                    long n = Math.min(b.size(), HASHED_SAMPLES - hashed);
                    crc.update(data.asSlice(0, n * sampleBytes).asByteBuffer());
                    hashed += n;
                }
                if (end != null) { // the window is over: only hashing is left
                    if (hashed >= HASHED_SAMPLES) {
                        done = true;
                        break;
                    }
                    continue;
                }
                if (step != null) {
                    step.train(b);
                } else if (stepNanos > 0) {
                    Thread.sleep(Duration.ofNanos(stepNanos));
                }
                samples += b.size();
                now = System.nanoTime();
                if (warmAt == 0 && now - first >= warmupNanos) {
                    warmAt = now;
                    warmSamples = samples;
                    warmCpu = cpuNanos();
                    warmWait = c.waitNanos();
                    warmWork = c.workNanos();
                    System.out.println(Json.object().put("event", "warm").put("mode", mode));
                    System.out.flush();
                }
                if (warmAt != 0 && now - warmAt >= measureNanos) {
                    end = WindowEnd.at(now, samples, c);
                    if (hashed >= HASHED_SAMPLES) {
                        done = true;
                        break;
                    }
                }
            }
        }
        if (warmAt == 0) {
            throw new IllegalStateException("the stream ended before the warm-up was over");
        }
        if (end == null) { // the stream ended inside the window: the window ends with it
            end = WindowEnd.at(System.nanoTime(), samples, c);
        }
        double window = (end.nanoTime() - warmAt) / 1e9;
        long n = end.samples() - warmSamples;
        System.out.println(Json.object()
                .put("event", "done")
                .put("mode", mode)
                .put("batch_size", batchSize)
                .put("step", model != null ? "djl " + model : "simulated")
                .put("step_ms", stepMs)
                .put("samples", n)
                .put("seconds", window)
                .put("samples_per_s", n / window)
                .put("cpu_s", (end.cpuNanos() - warmCpu) / 1e9)
                .put("wait_s", (end.waitNanos() - warmWait) / 1e9)
                .put("work_s", (end.workNanos() - warmWork) / 1e9)
                .put("out_of_order", outOfOrder)
                .put("first_samples_crc", Long.toHexString(crc.getValue()))
                .put("hashed_samples", hashed)
                .put("first_position", firstPosition)
                .put("pid", ProcessHandle.current().pid()));
        sink += touched;
        System.out.flush();
    }

    /** The measured window's figures, taken as it closes. */
    private record WindowEnd(long nanoTime, long samples, long cpuNanos, long waitNanos, long workNanos) {
        static WindowEnd at(long nanoTime, long samples, TensorConsumer c) {
            return new WindowEnd(nanoTime, samples, JobCommand.cpuNanos(), c.waitNanos(), c.workNanos());
        }
    }

    static long cpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return ProcessHandle.current()
                .info()
                .totalCpuDuration()
                .map(Duration::toNanos)
                .orElse(0L);
    }
}
