package io.tensorsocket.bench;

import com.sun.management.OperatingSystemMXBean;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.BulkCopy;
import io.tensorsocket.arena.HugePageMapping;
import io.tensorsocket.arena.SharedArena;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The multi-process throughput and latency harness: one producer in this JVM, K consumer JVMs.
 *
 * <pre>
 *   handoff [batches]            publish-to-hold latency of small batches, producer paced at 1 batch/ms, after a
 *                                warm-up; handed over through the descriptor ring and over the socket
 *   fanout  [K...] [--touch M]   batches/s of 64×3×224×224 float32 to K consumers, beside memcpy bandwidth and
 *                                the sustained copy of a batch into slots
 *   producer-cpu [K...] [--socket]  CPU time of the producer's JVM per published batch with K consumers (handed
 *                                over through descriptor rings, or over the sockets)
 * </pre>
 * Prints a table and one JSON object per metric per line.
 */
public final class Harness {

    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "all";
        String touch = "page";
        boolean ring = true;
        List<Integer> ks = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--socket")) {
                ring = false;
            } else if (args[i].equals("--touch")) {
                touch = args[++i];
            } else {
                ks.add(Integer.parseInt(args[i]));
            }
        }
        boolean ksGiven = !ks.isEmpty();
        if (!ksGiven) {
            ks = List.of(1, 2, 4);
        }
        if (what.equals("handoff") || what.equals("all")) {
            handoff(args.length > 1 && what.equals("handoff") ? Integer.parseInt(args[1]) : 10_000);
        }
        if (what.equals("producer-cpu")) {
            for (int k : ksGiven ? ks : List.of(1, 4, 16)) {
                ProducerCpu c = producerCpu(k, 3000, ring);
                System.out.printf(
                        Locale.ROOT,
                        "{\"metric\": \"producer_cpu_us_per_batch\", \"value\": %.1f, \"unit\": \"us\", "
                                + "\"consumers\": %d, \"batches\": %d, \"path\": \"%s\", \"producer_thread_us\": %.1f, "
                                + "\"release_reader_us\": %.1f}%n",
                        c.cpuUsPerBatch(),
                        k,
                        c.batches(),
                        ring ? "ring" : "socket",
                        c.publishUsPerBatch(),
                        c.readerUsPerBatch());
            }
        }
        if (what.equals("fanout") || what.equals("all")) {
            CopyLimit limit = memcpy();
            System.out.printf(
                    Locale.ROOT,
                    "{\"metric\": \"memcpy_gb_per_s\", \"value\": %.2f, \"unit\": \"GB/s\", "
                            + "\"small_pages_gb_per_s\": %.2f, \"huge_pages_gb_per_s\": %.2f, \"jdk_copy_gb_per_s\": %.2f, "
                            + "\"c_library_copy_gb_per_s\": %.2f}%n",
                    limit.gbPerS(),
                    limit.smallPagesGbPerS(),
                    limit.hugePagesGbPerS(),
                    limit.jdkCopyGbPerS(),
                    limit.cLibraryCopyGbPerS());
            SlotCopy copy = slotCopy(100);
            System.out.printf(
                    Locale.ROOT,
                    "{\"metric\": \"slot_copy_batches_per_s\", \"value\": %.2f, \"unit\": \"batches/s\", "
                            + "\"best_batches_per_s\": %.2f, \"beside_busy_cpu_batches_per_s\": %.2f}%n",
                    copy.meanPerS(),
                    copy.bestPerS(),
                    copy.besideBusyCpuPerS());
            for (int k : ks) {
                fanout(k, touch);
            }
        }
    }

    /** Publish-to-consumer latency of small batches. */
    public record Handoff(double p50Us, double p99Us, long batches) {}

    /** The fan-out's batch: 64 samples of 3×224×224 float32, 38.5 MB. */
    private static final long[] FANOUT_SAMPLE = {3, 224, 224};

    private static final int FANOUT_BATCH = 64;
    public static final long FANOUT_BATCH_BYTES = FANOUT_BATCH * Tensor.numel(FANOUT_SAMPLE) * DType.FLOAT32.byteSize();

    /**
     * Batches/s of large batches to K consumers (the slowest consumer's rate and the sum over all), and what the producer's thread spent per batch from its second epoch on (ms): claiming a
     * slot (waiting for one to be released), copying the batch into it, publishing it (handing it to every consumer,
     * waking those asleep).
     */
    public record Fanout(
            int consumers, double perConsumer, double aggregate, double claimMs, double copyMs, double publishMs) {}

    static void handoff(int batches) throws Exception {
        warmProducer(HANDOFF_WARMUP);
        for (boolean ring : new boolean[] {true, false}) {
            Handoff r = handoff(batches, 0, ring);
            System.out.printf(
                    Locale.ROOT,
                    "{\"metric\": \"handoff_us\", \"p50\": %.1f, \"p99\": %.1f, \"unit\": \"us\", "
                            + "\"batch\": \"64x3x32x32 float32\", \"batches\": %d, \"path\": \"%s\"}%n",
                    r.p50Us(),
                    r.p99Us(),
                    r.batches(),
                    ring ? "ring" : "socket");
        }
    }

    /**
     * Batches handed over before the latencies count: both JVMs' per-batch paths are compiled by C2 by then
     * (some only after several thousand calls), so the figures describe a consumer in steady state; with
     * 2000, C2 still compiled during the measurement and made most of its 99th percentile on two cores.
     */
    public static final int HANDOFF_WARMUP = 6000;

    /**
     * Measures {@code batches} batches of 64×3×32×32 float32, the producer paced at one batch per millisecond,
     * handed over through the consumer's descriptor ring ({@code ring}) or over its socket; the consumer
     * polls for up to {@code spinMicros} before it sleeps.
     */
    public static Handoff handoff(int batches, long spinMicros, boolean ring) throws Exception {
        return handoff(HANDOFF_WARMUP, batches, spinMicros, ring);
    }

    /**
     * Hands {@code batches} batches over and measures nothing: the producer of every hand-off run lives in
     * this JVM, so without this the first run would also time the JIT compiling the producer's side (it
     * made the first of otherwise equal runs' 99th percentile twice the others').
     */
    public static void warmProducer(int batches) throws Exception {
        handoff(batches, 1, 0, true);
    }

    /** As {@link #handoff(int, long, boolean)} after {@code warmup} batches that do not count. */
    public static Handoff handoff(int warmup, int batches, long spinMicros, boolean ring) throws Exception {
        return handoff(warmup, batches, spinMicros, ring, false);
    }

    /**
     * As {@link #handoff(int, int, long, boolean)}, to a Python consumer ({@code python}: the client's
     * bench_consumer.py; {@link #pythonUnavailable()} says whether one can run) or a Java one.
     */
    public static Handoff handoff(int warmup, int batches, long spinMicros, boolean ring, boolean python)
            throws Exception {
        ReplaySource src = new ReplaySource(new long[] {3, 32, 32}, DType.FLOAT32, 64, warmup + batches, 1_000_000);
        Map<String, Double> r =
                run(src, 1, 1, "none", spinMicros, warmup, ring, python).getFirst();
        return new Handoff(r.get("p50_us"), r.get("p99_us"), r.get("batches").longValue());
    }

    /**
     * CPU time the producer's JVM spent per published batch, serving {@code consumers} consumers: in all, and
     * of that on the producer thread (filling and publishing) and the thread reading consumers' releases.
     */
    public record ProducerCpu(
            int consumers, long batches, double cpuUsPerBatch, double publishUsPerBatch, double readerUsPerBatch) {}

    /**
     * Publishes {@code batches} small batches (64×3×32×32 float32, paced at 5 000 batches/s) to {@code k}
     * consumer JVMs and divides this JVM's CPU time (producer thread, connection threads, everything) by
     * the batches published after a warm-up of {@link #HANDOFF_WARMUP} batches (so that the JIT compiling
     * the hot paths is not counted): an upper bound of what publishing costs (it includes filling each
     * batch), as the consumer count grows. Batches are handed over through descriptor rings ({@code ring})
     * or over the consumers' sockets.
     */
    public static ProducerCpu producerCpu(int k, int batches, boolean ring) throws Exception {
        ReplaySource src =
                new ReplaySource(new long[] {3, 32, 32}, DType.FLOAT32, 64, HANDOFF_WARMUP + batches, 200_000);
        var os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (ScratchDirectory scratch = ScratchDirectory.create("tensorsocket-bench-");
                TensorProducer p = TensorProducer.builder()
                        .directory(scratch.resolve("p"))
                        .source(src)
                        .epochs(1)
                        .minConsumers(k)
                        .slots(8)
                        .build()) {
            Path dir = scratch.resolve("p");
            p.start();
            List<Process> procs = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                procs.add(startJvm(
                        BenchConsumer.class, dir.toString(), "64", "1", "none", "0", "0", ring ? "ring" : "socket"));
            }
            while (p.batchesPublished()
                    < HANDOFF_WARMUP) { // implies that everyone attached, as publishing waits for that
                Thread.sleep(1);
            }
            long cpu0 = os.getProcessCpuTime();
            // The producer thread ends with the stream, and a dead thread has no CPU time: sample while it runs.
            long[] ids = {threadId("tensorsocket-producer-"), threadId("tensorsocket-consumer-reader")};
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            AtomicLongArray last = new AtomicLongArray(2);
            Thread sampler = Thread.ofPlatform().daemon().start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    for (int i = 0; i < 2; i++) {
                        last.accumulateAndGet(i, threads.getThreadCpuTime(ids[i]), Math::max);
                    }
                    LockSupport.parkNanos(10_000_000L);
                }
            });
            long publish0 = threads.getThreadCpuTime(ids[0]);
            long reader0 = threads.getThreadCpuTime(ids[1]);
            long published0 = p.batchesPublished();
            for (Process proc : procs) {
                proc.getInputStream().transferTo(OutputStream.nullOutputStream());
                proc.waitFor(10, TimeUnit.MINUTES);
            }
            long cpu = os.getProcessCpuTime() - cpu0;
            sampler.interrupt();
            sampler.join();
            long publish = last.get(0) - publish0;
            long reader = last.get(1) - reader0;
            double n = Math.max(1, p.batchesPublished() - published0);
            p.await(Duration.ofSeconds(30));
            return new ProducerCpu(k, (long) n, cpu / 1e3 / n, publish / 1e3 / n, reader / 1e3 / n);
        }
    }

    /** The id of this JVM's live thread whose name starts with {@code prefix}. */
    private static long threadId(String prefix) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith(prefix))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no thread named " + prefix + "..."))
                .threadId();
    }

    static void fanout(int k, String touch) throws Exception {
        Fanout f = fanout(k, touch, 100);
        System.out.printf(
                Locale.ROOT,
                "{\"metric\": \"fanout_batches_per_s\", \"value\": %.2f, \"unit\": \"batches/s per consumer\", "
                        + "\"consumers\": %d, \"aggregate\": %.2f, \"batch\": \"64x3x224x224 float32\", \"touch\": \"%s\", "
                        + "\"producer_claim_ms\": %.3f, \"producer_copy_ms\": %.3f, \"producer_publish_ms\": %.3f}%n",
                f.perConsumer(),
                k,
                f.aggregate(),
                touch,
                f.claimMs(),
                f.copyMs(),
                f.publishMs());
    }

    /**
     * Serves two epochs of {@code batchesPerEpoch} 64×3×224×224 float32 batches to {@code k} consumer JVMs; each
     * consumer's rate counts the batches after its first fifth of an epoch (its warm-up).
     */
    public static Fanout fanout(int k, String touch, int batchesPerEpoch) throws Exception {
        ReplaySource src = new ReplaySource(FANOUT_SAMPLE, DType.FLOAT32, FANOUT_BATCH, batchesPerEpoch, 0);
        List<Map<String, Double>> rs = run(src, k, 2, touch, 0, Math.max(1, batchesPerEpoch / 5), true);
        double min = rs.stream().mapToDouble(m -> m.get("batches_per_s")).min().orElse(0);
        double sum = rs.stream().mapToDouble(m -> m.get("batches_per_s")).sum();
        ReplaySource.Timing t = src.timing();
        return new Fanout(k, min, sum, t.claimMs(), t.copyMs(), t.publishMs());
    }

    /** Why no Python consumer can be measured here, or null if one can. */
    public static String pythonUnavailable() {
        return PythonConsumer.unavailable();
    }

    private static List<Map<String, Double>> run(
            ReplaySource src, int consumers, int epochs, String touch, long spinMicros, int warmup, boolean ring)
            throws Exception {
        return run(src, consumers, epochs, touch, spinMicros, warmup, ring, false);
    }

    private static List<Map<String, Double>> run(
            ReplaySource src,
            int consumers,
            int epochs,
            String touch,
            long spinMicros,
            int warmup,
            boolean ring,
            boolean python)
            throws Exception {
        List<Map<String, Double>> results = new ArrayList<>();
        try (ScratchDirectory scratch = ScratchDirectory.create("tensorsocket-bench-");
                TensorProducer p = TensorProducer.builder()
                        .directory(scratch.resolve("p"))
                        .source(src)
                        .epochs(epochs)
                        .minConsumers(consumers)
                        .slots(8)
                        .build()) {
            Path dir = scratch.resolve("p");
            p.start();
            List<Process> procs = new ArrayList<>();
            for (int i = 0; i < consumers; i++) {
                procs.add(
                        python
                                ? PythonConsumer.start(dir, src.layout().batchSize(), epochs, warmup, spinMicros, ring)
                                : startJvm(
                                        BenchConsumer.class,
                                        dir.toString(),
                                        Integer.toString(src.layout().batchSize()),
                                        Integer.toString(epochs),
                                        touch,
                                        Long.toString(spinMicros),
                                        Integer.toString(warmup),
                                        ring ? "ring" : "socket"));
            }
            for (Process proc : procs) {
                String result = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))
                        .lines()
                        .filter(l -> l.startsWith("RESULT"))
                        .findFirst()
                        .orElseThrow();
                if (!proc.waitFor(10, TimeUnit.MINUTES)) {
                    proc.destroyForcibly();
                }
                Map<String, Double> m = new HashMap<>();
                for (String kv : result.substring(7).split(" ")) {
                    String[] p2 = kv.split("=");
                    m.put(p2[0], Double.parseDouble(p2[1]));
                }
                results.add(m);
            }
            p.await(Duration.ofSeconds(30));
        }
        return results;
    }

    /** Resident memory of a consumer that read batches, beside one that connected and read nothing (kB). */
    public record Rss(
            int batchSize,
            int batches,
            long baselineKb,
            long readerKb,
            long baselineAnonKb,
            long readerAnonKb,
            long readerShmemKb) {
        public double extraMb() {
            return (readerKb - baselineKb) / 1024.0;
        }

        public double extraAnonMb() {
            return (readerAnonKb - baselineAnonKb) / 1024.0;
        }
    }

    /**
     * Starts a baseline consumer JVM (connects, reads nothing) and then one that reads {@code batches}
     * 64×3×224×224 float32 batches at {@code consumerBatch} samples each, and reports both resident sizes.
     */
    public static Rss consumerRss(int consumerBatch, int batches) throws Exception {
        int perEpoch = (int) ((long) consumerBatch * (batches + 4) / 64 + 16);
        ReplaySource src = new ReplaySource(FANOUT_SAMPLE, DType.FLOAT32, FANOUT_BATCH, perEpoch, 0);
        try (ScratchDirectory scratch = ScratchDirectory.create("tensorsocket-bench-");
                TensorProducer p = TensorProducer.builder()
                        .directory(scratch.resolve("p"))
                        .source(src)
                        .epochs(1)
                        .slots(8)
                        .drainTimeout(Duration.ofMillis(100))
                        .build()) {
            Path dir = scratch.resolve("p");
            p.start();
            long[] base = rss(dir, consumerBatch, 0);
            long[] reader = rss(dir, consumerBatch, batches);
            return new Rss(consumerBatch, batches, base[0], reader[0], base[1], reader[1], reader[2]);
        }
    }

    /** Starts {@code main} in a JVM like this one (same java, class path and native access); stderr is shared. */
    static Process startJvm(Class<?> main, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                main.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
    }

    private static long[] rss(Path dir, int batchSize, int batches) throws Exception {
        Process proc =
                startJvm(RssConsumer.class, dir.toString(), Integer.toString(batchSize), Integer.toString(batches));
        String line = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))
                .lines()
                .filter(l -> l.startsWith("RSS"))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("the RSS probe consumer printed no result"));
        if (!proc.waitFor(2, TimeUnit.MINUTES)) {
            proc.destroyForcibly();
        }
        long[] out = new long[3];
        String[] kv = line.substring(4).split(" ");
        for (int i = 0; i < 3; i++) {
            out[i] = Long.parseLong(kv[i].split("=")[1]);
        }
        return out;
    }

    /**
     * Copies of one prepared fan-out batch into the slots of an arena made as a producer makes its own
     * ({@link SharedArena}: a file in /dev/shm, mapped, in 2 MiB pages unless {@code TENSORSOCKET_HUGE_PAGES=0}, pre-touched):
     * their mean rate (batches/s), the rate of the fastest one, and the mean rate of the same copies while another
     * thread computes without touching memory (on a machine of two CPUs, on the other one).
     */
    public record SlotCopy(double meanPerS, double bestPerS, double besideBusyCpuPerS) {}

    /**
     * Copies one prepared fan-out batch into the 8 slots of a producer's arena, round robin, {@code copies}
     * times, with {@link BulkCopy} as a producer's {@code put} copies: what the fan-out's producer does per batch,
     * with no consumer and no hand-off. Beside
     * {@link #memcpy()} (a best of 10) it shows how much of the gap between a fan-out and that limit is the copy
     * itself: a sustained copy's mean runs below the best single copy, and its own best shows by how much. Then the
     * same copies again beside a busy CPU: where CPUs share a core (hyper-threads, or the vCPUs of some virtual
     * machines) a consumer that works while the producer copies slows the copy by about as much.
     */
    public static SlotCopy slotCopy(int copies) throws IOException {
        int slots = 8;
        ArenaLayout layout = ArenaLayout.of(
                new BatchLayout(List.of(new TensorSpec(ReplaySource.DATA, DType.FLOAT32, FANOUT_SAMPLE)), FANOUT_BATCH),
                slots);
        try (ScratchDirectory scratch = ScratchDirectory.create("tensorsocket-bench-");
                Arena a = Arena.ofConfined();
                SharedArena arena = SharedArena.create(
                        scratch.resolve("arena"),
                        layout,
                        1,
                        ProcessHandle.current().pid())) {
            MemorySegment batch = HugePageMapping.anonymous(FANOUT_BATCH_BYTES, true, a); // as ReplaySource holds it
            batch.fill((byte) 1);
            for (int i = 0; i < slots; i++) { // a round to warm up, as the fan-out's consumers do
                BulkCopy.copy(batch, 0, arena.region(i, 0), 0, FANOUT_BATCH_BYTES);
            }
            Copies alone = copies(batch, arena, slots, copies);
            AtomicBoolean stop = new AtomicBoolean();
            Thread busy = Thread.ofPlatform()
                    .daemon()
                    .name("tensorsocket-bench-busy-cpu")
                    .start(() -> {
                        long x = 1;
                        while (!stop.get()) {
                            for (int i = 0; i < 100_000; i++) {
                                x = x * 6364136223846793005L
                                        + 1442695040888963407L; // registers only, no memory traffic
                            }
                        }
                        sink = x;
                    });
            Copies besideBusy;
            try {
                besideBusy = copies(batch, arena, slots, copies);
            } finally {
                stop.set(true);
            }
            try {
                busy.join(Duration.ofSeconds(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new SlotCopy(alone.meanPerS(), alone.bestPerS(), besideBusy.meanPerS());
        }
    }

    private static volatile long sink;

    /** The mean rate of a run of copies and the rate of its fastest copy (batches/s). */
    private record Copies(double meanPerS, double bestPerS) {}

    /** {@code copies} copies of {@code batch} into the slots, round robin. */
    private static Copies copies(MemorySegment batch, SharedArena arena, int slots, int copies) {
        long fastest = Long.MAX_VALUE;
        long t = System.nanoTime();
        for (int i = 0; i < copies; i++) {
            long t0 = System.nanoTime();
            BulkCopy.copy(batch, 0, arena.region(i % slots, 0), 0, FANOUT_BATCH_BYTES);
            fastest = Math.min(fastest, System.nanoTime() - t0);
        }
        return new Copies(copies / ((System.nanoTime() - t) / 1e9), 1e9 / fastest);
    }

    /**
     * The memory-copy limit of writing batches: the best of 10 native-to-native copies of a 64 MiB buffer, in
     * anonymous memory of 4 KiB pages and in memory of 2 MiB pages (where the kernel gives them; an arena can
     * have them too, see {@link io.tensorsocket.arena.HugePageMapping}), each by the JDK's copy and by the C
     * library's ({@link BulkCopy}, which producers use): the limit is whichever copy is faster on this machine.
     * {@link #gbPerS()} is the best of all four; the other figures are the best per page size and per copy.
     */
    public record CopyLimit(PageCopies smallPages, PageCopies hugePages) {
        public double gbPerS() {
            return Math.max(smallPagesGbPerS(), hugePagesGbPerS());
        }

        public double smallPagesGbPerS() {
            return smallPages.best();
        }

        public double hugePagesGbPerS() {
            return hugePages.best();
        }

        public double jdkCopyGbPerS() {
            return Math.max(smallPages.jdkGbPerS(), hugePages.jdkGbPerS());
        }

        public double cLibraryCopyGbPerS() {
            return Math.max(smallPages.cLibraryGbPerS(), hugePages.cLibraryGbPerS());
        }

        /** The better of each copy in each page size of this and {@code other}. */
        public CopyLimit best(CopyLimit other) {
            return new CopyLimit(smallPages.best(other.smallPages), hugePages.best(other.hugePages));
        }
    }

    /** Measures the {@link CopyLimit}. */
    public static CopyLimit memcpy() {
        return new CopyLimit(memcpy(false), memcpy(true));
    }

    /** The best rate (GB/s) of each copy in one page size. */
    public record PageCopies(double jdkGbPerS, double cLibraryGbPerS) {
        double best() {
            return Math.max(jdkGbPerS, cLibraryGbPerS);
        }

        PageCopies best(PageCopies other) {
            return new PageCopies(Math.max(jdkGbPerS, other.jdkGbPerS), Math.max(cLibraryGbPerS, other.cLibraryGbPerS));
        }
    }

    private static PageCopies memcpy(boolean hugePages) {
        try (Arena a = Arena.ofConfined()) {
            long n = 64L << 20;
            MemorySegment x = HugePageMapping.anonymous(n, hugePages, a);
            MemorySegment y = HugePageMapping.anonymous(n, hugePages, a);
            x.fill((byte) 1);
            y.fill((byte) 2);
            double jdk = 0;
            double cLibrary = 0;
            for (int i = 0; i < 10; i++) { // alternating, so that neither copy has the quieter minute to itself
                long t = System.nanoTime();
                MemorySegment.copy(x, 0, y, 0, n);
                jdk = Math.max(jdk, n / ((System.nanoTime() - t) / 1e9) / 1e9);
                t = System.nanoTime();
                BulkCopy.copy(x, 0, y, 0, n);
                cLibrary = Math.max(cLibrary, n / ((System.nanoTime() - t) / 1e9) / 1e9);
            }
            return new PageCopies(jdk, cLibrary);
        }
    }
}
