package io.tensorsocket.cli;

import com.sun.management.OperatingSystemMXBean;
import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.DType;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.BulkCopy;
import io.tensorsocket.bench.Harness;
import io.tensorsocket.bench.ScratchDirectory;
import io.tensorsocket.flight.FlightServe;
import io.tensorsocket.flight.RelaySource;
import io.tensorsocket.flight.RemoteConsumer;
import io.tensorsocket.flight.RemoteOptions;
import io.tensorsocket.source.SyntheticSpec;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code tensorsocket bench-flight}: throughput of 64x3x224x224 float32 batches to consumers over Arrow
 * Flight on loopback, through a relay, and through shared memory, beside the machine's memory-copy
 * rate and what a plain TCP socket pair on loopback moves (the limit of any network transport here), each
 * remote case's share of it printed beside it. Everything runs in this JVM (one producer, its Flight server,
 * consumer threads) over real sockets and shared memory; each consumer reads one byte of every 4 KiB page of
 * every batch.
 */
@Command(
        name = "bench-flight",
        mixinStandardHelpOptions = true,
        description = "Measure batches/s and GB/s to remote (Flight, loopback), relayed and shared-memory consumers.")
final class FlightBenchCommand implements Callable<Integer> {
    private static final int BATCH = 64;
    private static final int WARM_BATCHES = 10;

    @Option(
            names = "--sample-shape",
            defaultValue = "3x224x224",
            description =
                    "Shape of one float32 sample (default ${DEFAULT-VALUE}: batches of 38.5 MB; 3x32x32: 0.8 MB).")
    String sampleShape;

    @Option(
            names = "--seconds",
            defaultValue = "8",
            description =
                    "Measured seconds per case, after a warm-up: 10 batches per consumer, then at least 2 s and until the JIT is quiet, at most --max-warm-up (default ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--only", split = ",", description = "Cases: tcp, shm, flight, relay (default: all).")
    List<String> only;

    @Option(
            names = "--max-warm-up",
            defaultValue = "60",
            description =
                    "Seconds a case's warm-up may last at most, if the JIT does not go quiet sooner (default ${DEFAULT-VALUE}).")
    double maxWarmUpSeconds;

    @Spec
    CommandSpec spec;

    @Option(
            names = "--consumers",
            split = ",",
            defaultValue = "1,4",
            description = "Consumer counts of the shm and flight cases (default ${DEFAULT-VALUE}).")
    List<Integer> consumers;

    @Override
    public Integer call() throws Exception {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        shape = parseShape(sampleShape);
        if (!(maxWarmUpSeconds >= 0)) {
            throw new ParameterException(
                    spec.commandLine(), "--max-warm-up takes seconds, 0 or more, not " + maxWarmUpSeconds);
        }
        double batchGb = batchBytes() / 1e9;
        double memcpy = Harness.memcpy().gbPerS();
        System.out.println(
                "# bench-flight on " + Runtime.getRuntime().availableProcessors() + " processors, batch " + BATCH + "x"
                        + sampleShape + " float32 (" + String.format(Locale.ROOT, "%.2f", batchGb * 1e3) + " MB)");
        memcpyGbPerS = memcpy;
        row("memcpy", 0, memcpy / batchGb, memcpy / batchGb, memcpy, 1e3 / (memcpy / batchGb));
        if (wants("tcp")) {
            tcpLimit();
        }
        try (ScratchDirectory scratch = ScratchDirectory.create("tensorsocket-bench-flight-")) {
            Path base = scratch.path();
            for (int k : consumers) {
                if (wants("shm")) {
                    run("shm", k, base, false, false);
                }
                if (wants("flight")) {
                    run("flight", k, base, true, false);
                }
            }
            if (wants("relay")) {
                run("relay", 4, base, true, true);
            }
        }
        return 0;
    }

    /**
     * What a plain TCP socket pair on loopback moves, the limit of any network transport on this machine: one thread
     * writes batch-sized messages from native memory, another reads each whole into native memory and touches every
     * page, as the consumers do; {@code seconds} of it after a warm-up of at least a second ({@link WarmUp}).
     */
    private void tcpLimit() throws Exception {
        long bytes = batchBytes();
        try (ServerSocketChannel server =
                        ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                SocketChannel out = SocketChannel.open(server.getLocalAddress());
                SocketChannel in = server.accept();
                Arena arena = Arena.ofShared()) {
            ByteBuffer src = arena.allocate(bytes, 64).fill((byte) 1).asByteBuffer();
            ByteBuffer dst = arena.allocate(bytes, 64).fill((byte) 2).asByteBuffer();
            AtomicBoolean running = new AtomicBoolean(true);
            Thread writer = Thread.ofPlatform().name("bench-tcp-writer").start(() -> {
                try {
                    while (running.get()) {
                        src.clear();
                        while (src.hasRemaining()) {
                            out.write(src);
                        }
                    }
                } catch (IOException closed) {
                    // the reader closed its end: the measurement is over
                }
            });
            long sink = 0;
            long batches = 0;
            long t0 = 0;
            long cpu0 = 0;
            WarmUp warmUp = new WarmUp(Duration.ofSeconds(1), maxWarmUp());
            long end = Long.MAX_VALUE;
            for (long now = System.nanoTime(); now < end; now = System.nanoTime()) {
                if (t0 == 0 && warmUp.over(now)) {
                    t0 = now;
                    cpu0 = processCpuNanos();
                    end = now + (long) (seconds * 1e9);
                }
                dst.clear();
                while (dst.hasRemaining()) {
                    if (in.read(dst) < 0) {
                        throw new EOFException("the TCP pair's writer closed its end during the measurement");
                    }
                }
                for (int off = 0; off < bytes; off += 4096) {
                    sink += dst.get(off);
                }
                batches += t0 != 0 ? 1 : 0;
            }
            double s = (System.nanoTime() - t0) / 1e9;
            long cpu = processCpuNanos() - cpu0;
            running.set(false);
            in.close();
            writer.join(5_000);
            double rate = batches / s;
            tcpGbPerS = rate * bytes / 1e9;
            warmedSeconds = warmUp.seconds();
            row("tcp", 1, rate, rate, tcpGbPerS, cpu / 1e6 / Math.max(1, batches));
            if (sink == 42) {
                System.out.print("");
            }
        }
    }

    private Duration maxWarmUp() {
        return Duration.ofMillis((long) (maxWarmUpSeconds * 1000));
    }

    private boolean wants(String c) {
        return only == null || only.contains(c);
    }

    private void run(String kind, int k, Path base, boolean remote, boolean relay) throws Exception {
        Path dir = base.resolve(kind + k);
        TensorProducer producer = TensorProducer.builder()
                .directory(dir)
                .source(new Replay(shape))
                .epochs(0)
                .minConsumers(remote ? (relay ? 1 : k) : k)
                .slots(8)
                .build()
                .start();
        FlightServe flight =
                remote ? FlightServe.builder().directory("bench", dir).build().start() : null;
        TensorProducer relayProducer = null;
        Path relayDir = base.resolve(kind + k + "-relay");
        if (relay) {
            relayProducer = TensorProducer.builder()
                    .directory(relayDir)
                    .source(RelaySource.connect(
                            flight.address().toString(), BATCH, RemoteOptions.defaults(), Duration.ofMinutes(1)))
                    .epochs(0)
                    .minConsumers(k)
                    .slots(8)
                    .build()
                    .start();
        }
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLongArray counts = new AtomicLongArray(k);
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        for (int i = 0; i < k; i++) {
            int id = i;
            threads.add(Thread.ofPlatform().name("bench-consumer-" + i).start(() -> {
                ConsumerOptions o = ConsumerOptions.batchSize(BATCH);
                try {
                    if (remote && !relay) {
                        try (RemoteConsumer c = RemoteConsumer.connect(flight.address(), o, RemoteOptions.defaults())) {
                            loop(c, running, counts, id);
                        }
                    } else {
                        try (TensorConsumer c = TensorConsumer.connect(relay ? relayDir : dir, o)) {
                            loop(c, running, counts, id);
                        }
                    }
                } catch (Throwable t) {
                    if (running.get()) {
                        errors.add(t);
                    }
                }
            }));
        }
        // Warm until every consumer has had WARM_BATCHES (until then the send and receive buffers are still
        // being allocated: fresh memory, slow on a VM), then until the JIT has gone quiet. Bounded, so a stall
        // still ends.
        long warmStart = System.nanoTime();
        long warmLimit = warmStart + 60_000_000_000L + maxWarmUp().toNanos();
        while (min(counts) < WARM_BATCHES && System.nanoTime() < warmLimit && errors.isEmpty()) {
            Thread.sleep(50);
        }
        WarmUp warmUp = new WarmUp(Duration.ofSeconds(2), maxWarmUp());
        while (!warmUp.over(System.nanoTime()) && errors.isEmpty()) {
            Thread.sleep(50);
        }
        warmedSeconds = (System.nanoTime() - warmStart) / 1e9;
        long[] before = snapshot(counts);
        long cpu0 = processCpuNanos();
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        long[] after = snapshot(counts);
        double s = (System.nanoTime() - t0) / 1e9;
        long cpu = processCpuNanos() - cpu0;
        running.set(false);
        // consumers leave first, so the server and producers close without streams in flight
        for (Thread t : threads) {
            t.join(10_000);
        }
        if (relayProducer != null) {
            relayProducer.close();
        }
        if (flight != null) {
            flight.close();
        }
        producer.close();
        if (!errors.isEmpty()) {
            throw new IllegalStateException(
                    kind + " with " + k + " consumers failed: " + errors.getFirst(), errors.getFirst());
        }
        double slowest = Double.MAX_VALUE;
        double total = 0;
        for (int i = 0; i < k; i++) {
            double r = (after[i] - before[i]) / s;
            slowest = Math.min(slowest, r);
            total += r;
        }
        double batchGb = batchBytes() / 1e9;
        row(kind, k, slowest, total, slowest * batchGb, total == 0 ? 0 : cpu / 1e6 / (total * s));
    }

    /** CPU time of this whole process (every thread: producer, server, gRPC, consumers). */
    private static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static void loop(Iterable<Batch> c, AtomicBoolean running, AtomicLongArray counts, int id) {
        long sink = 0;
        while (running.get()) {
            for (Batch b : c) {
                MemorySegment d = b.tensor(0).data();
                for (long off = 0; off < d.byteSize(); off += 4096) {
                    sink += d.get(ValueLayout.JAVA_BYTE, off);
                }
                counts.incrementAndGet(id);
                if (!running.get()) {
                    break;
                }
            }
        }
        if (sink == 42) {
            System.out.print("");
        }
    }

    private static long min(AtomicLongArray a) {
        long m = Long.MAX_VALUE;
        for (int i = 0; i < a.length(); i++) {
            m = Math.min(m, a.get(i));
        }
        return m;
    }

    private static long[] snapshot(AtomicLongArray a) {
        long[] s = new long[a.length()];
        for (int i = 0; i < s.length; i++) {
            s[i] = a.get(i);
        }
        return s;
    }

    /** GB/s of the plain TCP pair, measured first ({@link #tcpLimit}); 0 if it was not. */
    private double tcpGbPerS;
    /** GB/s of the memory copy measured first. */
    private double memcpyGbPerS;
    /** How long the warm-up of the case about to be printed lasted (0 for memcpy, which has none). */
    private double warmedSeconds;

    /** Prints one case; a remote case with its share of the TCP limit, a shared-memory one with its share of memcpy. */
    private void row(
            String kind, int k, double perConsumer, double aggregate, double gbPerConsumer, double cpuMsPerBatch) {
        Json j = Json.object()
                .put("case", kind)
                .put("consumers", k)
                .put("batches_per_s_per_consumer", perConsumer)
                .put("batches_per_s_aggregate", aggregate)
                .put("gb_per_s_per_consumer", gbPerConsumer)
                .put("gb_per_s_aggregate", aggregate * batchBytes() / 1e9)
                .put("cpu_ms_per_consumer_batch", cpuMsPerBatch);
        boolean remote = kind.equals("flight") || kind.equals("relay");
        if (remote && tcpGbPerS > 0) {
            j.put("of_tcp_limit", gbPerConsumer / tcpGbPerS);
        } else if (kind.equals("shm")) {
            j.put("of_memcpy", gbPerConsumer / memcpyGbPerS);
        }
        if (warmedSeconds > 0) {
            j.put("warmup_s", warmedSeconds);
        }
        System.out.println(j);
        System.out.flush();
    }

    /** The sample shape asked for ({@link #sampleShape}), set when the run starts. */
    private long[] shape;

    private long batchBytes() {
        return batchBytes(shape);
    }

    /** Bytes of one batch of float32 samples of {@code shape}. */
    private static long batchBytes(long[] shape) {
        return BATCH * Tensor.numel(shape) * DType.FLOAT32.byteSize();
    }

    private long[] parseShape(String text) {
        try {
            return SyntheticSpec.parseShape(text);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--sample-shape: " + e.getMessage());
        }
    }

    /**
     * Batches already in memory: one copy into the arena per batch ({@link BulkCopy}, as a producer's {@code put}
     * copies), so the data plane is what is measured.
     */
    private static final class Replay implements BatchSource {
        private final long[] shape;
        private final MemorySegment prepared;
        /** Batches per epoch: 100, or about 2 GB of them for small batches, so epoch ends are rare either way. */
        private final int batches;

        Replay(long[] shape) {
            this.shape = shape;
            this.prepared = Arena.global().allocate(batchBytes(shape), 64);
            this.batches = (int) Math.max(100, 2_000_000_000L / prepared.byteSize());
            for (long i = 0; i + 8 <= prepared.byteSize(); i += 8) {
                prepared.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            }
        }

        @Override
        public BatchLayout layout() {
            return new BatchLayout(List.of(new TensorSpec("data", DType.FLOAT32, shape)), BATCH);
        }

        @Override
        public long samplesPerEpoch() {
            return (long) batches * BATCH;
        }

        @Override
        public void emitEpoch(long epoch, BatchSink sink) {
            for (int i = 0; i < batches; i++) {
                SlotWriter slot = sink.claim();
                BulkCopy.copy(prepared, 0, slot.tensor(0), 0, prepared.byteSize());
                slot.publish(BATCH);
            }
        }
    }
}
