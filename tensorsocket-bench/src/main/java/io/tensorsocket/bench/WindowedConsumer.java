package io.tensorsocket.bench;

import com.sun.management.OperatingSystemMXBean;
import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A benchmark trainer that measures over a window its orchestrator sets, as the trainers of
 * {@code clients/python/examples/bench_remote.py} do: it reads batches from a producer (a name, a directory or a
 * {@code grpc://} address), reading one byte of every 4 KiB page of each; prints {@code READY} once it has read for
 * the warm-up; takes the window's start and end (wall-clock seconds, one line on stdin); and prints the batches it
 * got in that window, the seconds and its process's CPU seconds as one JSON line.
 *
 * <p>Arguments: producer, batch size, warm-up seconds.
 */
public final class WindowedConsumer {
    private static volatile long sink;

    public static void main(String[] args) throws Exception {
        String producer = args[0];
        int batchSize = Integer.parseInt(args[1]);
        double warmSeconds = Double.parseDouble(args[2]);
        AtomicReference<double[]> window = new AtomicReference<>();
        long readyAt = 0;
        boolean announced = false;
        long counted = 0;
        double t0 = -1;
        long cpu0 = 0;
        try (TensorConsumer c = TensorConsumer.connect(
                producer,
                ConsumerOptions.batchSize(batchSize)
                        .withConnectTimeout(Duration.ofSeconds(60))
                        .withThreadConfinedBatches(true))) {
            while (true) {
                for (Batch b : c) {
                    MemorySegment data = b.tensor(0).data();
                    long acc = 0;
                    for (long off = 0; off < data.byteSize(); off += 4096) {
                        acc += data.get(ValueLayout.JAVA_BYTE, off);
                    }
                    sink += acc;
                    long now = System.nanoTime();
                    if (readyAt == 0) {
                        readyAt = now + (long) (warmSeconds * 1e9);
                    }
                    if (!announced && now >= readyAt) {
                        announced = true;
                        System.out.println("READY");
                        System.out.flush();
                        Thread.ofPlatform().daemon().start(() -> window.set(readWindow()));
                    }
                    double[] w = window.get();
                    if (w == null) {
                        continue;
                    }
                    double wall = System.currentTimeMillis() / 1e3;
                    if (t0 < 0) {
                        if (wall >= w[0]) {
                            t0 = wall;
                            cpu0 = cpuNanos();
                        }
                        continue;
                    }
                    counted++;
                    if (wall >= w[1]) {
                        System.out.printf(
                                Locale.ROOT,
                                "{\"batches\": %d, \"seconds\": %.4f, \"cpu_s\": %.4f, \"sink\": %d}%n",
                                counted,
                                wall - t0,
                                (cpuNanos() - cpu0) / 1e9,
                                sink % 7);
                        System.out.flush();
                        return;
                    }
                }
            }
        }
    }

    private static double[] readWindow() {
        try {
            String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
            String[] parts = line.trim().split("\\s+");
            return new double[] {Double.parseDouble(parts[0]), Double.parseDouble(parts[1])};
        } catch (Exception e) {
            throw new IllegalStateException("no measuring window on stdin: " + e, e);
        }
    }

    private static long cpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
}
