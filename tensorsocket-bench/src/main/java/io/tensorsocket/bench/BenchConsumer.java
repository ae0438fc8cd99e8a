package io.tensorsocket.bench;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;

/**
 * A benchmark consumer process: iterates epochs, reads each batch (every byte, one word per page, or
 * nothing), records the publish-to-hold latency of each batch, and prints one line of results.
 * Arguments: directory, batch size, epochs, touch mode (all | page | none), and optionally the
 * microseconds a waiting consumer polls before sleeping ({@link ConsumerOptions#spinWait()}), the number
 * of first batches whose latency and time are not counted (a warm-up: a fresh JVM interprets its loops at first,
 * which says nothing of a training job hours in), and "ring" or "socket": how batches are
 * handed over ({@link ConsumerOptions#ringHandoff()}).
 */
public final class BenchConsumer {
    @SuppressWarnings("UnusedVariable") // a blackhole: written so the JIT keeps the reads, never read
    private static volatile long sink;

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        int batchSize = Integer.parseInt(args[1]);
        int epochs = Integer.parseInt(args[2]);
        String touch = args[3];
        Duration spin = Duration.ofNanos(args.length > 4 ? Long.parseLong(args[4]) * 1000 : 0);
        int warmup = args.length > 5 ? Integer.parseInt(args[5]) : 0;
        boolean ring = args.length <= 6 || args[6].equals("ring");
        try (TensorConsumer c = TensorConsumer.connect(
                dir,
                ConsumerOptions.batchSize(batchSize)
                        .withConnectTimeout(Duration.ofSeconds(30))
                        .withSpinWait(spin)
                        .withRingHandoff(ring))) {
            long[] latencies = new long[(int) (c.size() * epochs)];
            // a stream of another source (a feeder's) carries no publication stamps: no latencies then
            boolean stamped = c.tensors().stream().anyMatch(t -> t.name().equals(ReplaySource.STAMP));
            int n = 0;
            int seen = 0;
            long bytes = 0;
            long start = 0;
            long last = 0;
            for (int e = 0; e < epochs; e++) {
                for (Batch b : c) {
                    long held = System.nanoTime();
                    last = held;
                    if (seen == warmup) {
                        start = held; // the rate counts the batches after this one
                    }
                    if (seen++ >= warmup) {
                        latencies[n++] =
                                stamped ? held - b.tensor(ReplaySource.STAMP).getLong(0) : 0;
                    }
                    MemorySegment data = b.tensor(ReplaySource.DATA).data();
                    bytes += seen > warmup + 1 ? data.byteSize() : 0;
                    sink += read(data, touch);
                }
            }
            double seconds = (last - start) / 1e9;
            long[] sorted = Arrays.copyOf(latencies, n);
            Arrays.sort(sorted);
            // the batch that starts the clock is not counted in the rate (without a warm-up it waited for everyone to
            // join)
            System.out.printf(
                    "RESULT batches=%d seconds=%.4f batches_per_s=%.2f gb_per_s=%.3f p50_us=%.1f p99_us=%.1f%n",
                    n,
                    seconds,
                    (n - 1) / seconds,
                    bytes / seconds / 1e9,
                    sorted[n / 2] / 1e3,
                    sorted[Math.min(n - 1, (int) (n * 0.99))] / 1e3);
        }
    }

    private static long read(MemorySegment data, String touch) {
        long acc = 0;
        switch (touch) {
            case "all" -> {
                long words = data.byteSize() / 8;
                for (long i = 0; i < words; i++) {
                    acc += data.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                }
            }
            case "page" -> {
                for (long off = 0; off < data.byteSize(); off += 4096) {
                    acc += data.get(ValueLayout.JAVA_BYTE, off);
                }
            }
            default -> {}
        }
        return acc;
    }
}
