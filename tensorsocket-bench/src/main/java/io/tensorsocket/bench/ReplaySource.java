package io.tensorsocket.bench;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.DType;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.BulkCopy;
import io.tensorsocket.arena.HugePageMapping;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A loader whose batches are already in memory: each batch is one copy from a prepared buffer (in 2 MiB
 * pages where the kernel gives them) into the arena, by {@link BulkCopy} as a producer's {@code put} copies, plus
 * a publication timestamp, so benchmarks measure the data plane rather than data generation.
 * An optional pause between batches paces the producer for latency measurements. It times what the producer's
 * thread does per batch from the second epoch on (the first waits for consumers to start): the claim of a slot,
 * the copy and the publication ({@link #timing()}).
 */
final class ReplaySource implements BatchSource {
    static final String DATA = "data";
    static final String STAMP = "published_ns";

    private final BatchLayout layout;
    private final long batches;
    private final long pauseNanos;
    private final MemorySegment prepared;
    private long timedBatches;
    private long claimNanos;
    private long copyNanos;
    private long publishNanos;

    /** Milliseconds per batch the producer's thread spent claiming, copying and publishing, from the second epoch on. */
    record Timing(double claimMs, double copyMs, double publishMs) {}

    ReplaySource(long[] sampleShape, DType dtype, int batchSize, long batchesPerEpoch, long pauseNanos) {
        this.layout = new BatchLayout(
                List.of(new TensorSpec(DATA, dtype, sampleShape), TensorSpec.of(STAMP, DType.INT64)), batchSize);
        this.batches = batchesPerEpoch;
        this.pauseNanos = pauseNanos;
        long bytes = layout.tensors().getFirst().sampleBytes() * batchSize;
        // held in 2 MiB pages where the kernel gives them, as the memory-copy limit's buffers are (Harness#memcpy)
        this.prepared = HugePageMapping.anonymous(bytes, true, Arena.global());
        for (long i = 0; i + 8 <= bytes; i += 8) {
            prepared.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
        }
    }

    @Override
    public BatchLayout layout() {
        return layout;
    }

    @Override
    public long samplesPerEpoch() {
        return batches * layout.batchSize();
    }

    @Override
    public void emitEpoch(long epoch, BatchSink sink) {
        int b = layout.batchSize();
        long claiming = 0;
        long copying = 0;
        long publishing = 0;
        for (long i = 0; i < batches; i++) {
            if (pauseNanos > 0) {
                LockSupport.parkNanos(pauseNanos);
            }
            long t0 = System.nanoTime();
            SlotWriter slot = sink.claim();
            long t1 = System.nanoTime();
            BulkCopy.copy(prepared, 0, slot.tensor(0), 0, prepared.byteSize());
            MemorySegment stamps = slot.tensor(1);
            long now = System.nanoTime();
            for (int s = 0; s < b; s++) {
                stamps.setAtIndex(ValueLayout.JAVA_LONG, s, now);
            }
            slot.publish(b);
            claiming += t1 - t0;
            copying += now - t1;
            publishing += System.nanoTime() - now;
        }
        if (epoch > 0) {
            synchronized (this) {
                timedBatches += batches;
                claimNanos += claiming;
                copyNanos += copying;
                publishNanos += publishing;
            }
        }
    }

    synchronized Timing timing() {
        double per = Math.max(1, timedBatches) * 1e6;
        return new Timing(claimNanos / per, copyNanos / per, publishNanos / per);
    }

    @Override
    public String description() {
        return "replay";
    }
}
