package io.tensorsocket.bench.jmh;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.BulkCopy;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.source.SyntheticSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The data plane's primitives on a real /dev/shm arena: writing a batch into a slot (the producer's one
 * copy), taking a zero-copy view of a consumer batch inside a slot, and gathering a consumer batch that
 * spans two slots into a private buffer.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class DataPlaneBenchmarks {

    /** Per-sample shape: CIFAR-like 3x32x32 or ImageNet-like 3x224x224, float32. */
    @Param({"3x32x32", "3x224x224"})
    public String shape;

    private Path dir;
    private SharedArena arena;
    private Arena scope;
    private MemorySegment batch;
    private MemorySegment gather;
    private long sampleBytes;
    private final int batchSize = 64;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        long[] dims = SyntheticSpec.parseShape(shape);
        BatchLayout layout = new BatchLayout(List.of(new TensorSpec("data", DType.FLOAT32, dims)), batchSize);
        Path shm = Path.of("/dev/shm");
        dir = Files.createTempDirectory(
                Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "ts-jmh-");
        arena = SharedArena.create(
                dir.resolve("arena"),
                ArenaLayout.of(layout, 4),
                1,
                ProcessHandle.current().pid());
        sampleBytes = layout.tensors().getFirst().sampleBytes();
        scope = Arena.ofShared();
        batch = scope.allocate(sampleBytes * batchSize, 64);
        batch.fill((byte) 7);
        gather = scope.allocate(sampleBytes * batchSize, 64);
        gather.fill((byte) 0);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        arena.close();
        scope.close();
        Files.deleteIfExists(dir.resolve("arena"));
        Files.deleteIfExists(dir);
    }

    /** The producer writes one loader batch into a slot, as {@code put} copies it ({@link BulkCopy}). */
    @Benchmark
    public MemorySegment arenaWrite() {
        MemorySegment region = arena.region(1, 0);
        BulkCopy.copy(batch, 0, region, 0, batch.byteSize());
        return region;
    }

    /** A consumer batch of 48 samples inside one slot: a read-only view, no copy. */
    @Benchmark
    public MemorySegment view() {
        return arena.region(1, 0).asSlice(8 * sampleBytes, 48 * sampleBytes).asReadOnly();
    }

    /** A consumer batch of 64 samples that starts half-way through one slot and ends in the next: a copy. */
    @Benchmark
    public MemorySegment gather() {
        long half = batchSize / 2 * sampleBytes;
        MemorySegment.copy(arena.region(1, 0), half, gather, 0, half);
        MemorySegment.copy(arena.region(2, 0), 0, gather, half, half);
        return gather;
    }
}
