package io.tensorsocket.bench;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.DType;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.HugePageMapping;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * A loader whose batches are already in memory: each batch is one copy from a prepared buffer (in 2 MiB
 * pages where the kernel gives them) into the arena, plus a publication timestamp, so benchmarks measure
 * the data plane rather than data generation.
 * An optional pause between batches paces the producer for latency measurements.
 */
final class ReplaySource implements BatchSource {
    static final String DATA = "data";
    static final String STAMP = "published_ns";

    private final BatchLayout layout;
    private final long batches;
    private final long pauseNanos;
    private final MemorySegment prepared;

    ReplaySource(long[] sampleShape, DType dtype, int batchSize, long batchesPerEpoch, long pauseNanos) {
        this.layout = new BatchLayout(List.of(new TensorSpec(DATA, dtype, sampleShape), TensorSpec.of(STAMP, DType.INT64)),
                batchSize);
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
        for (long i = 0; i < batches; i++) {
            if (pauseNanos > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(pauseNanos);
            }
            SlotWriter slot = sink.claim();
            MemorySegment.copy(prepared, 0, slot.tensor(0), 0, prepared.byteSize());
            MemorySegment stamps = slot.tensor(1);
            long now = System.nanoTime();
            for (int s = 0; s < b; s++) {
                stamps.setAtIndex(ValueLayout.JAVA_LONG, s, now);
            }
            slot.publish(b);
        }
    }

    @Override
    public String description() {
        return "replay";
    }
}
