package io.tensorsocket.source;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.DType;
import io.tensorsocket.IndexedSource;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.SplittableRandom;

/**
 * A source of generated samples ({@link SyntheticSpec}), shuffled per epoch by seed, written straight
 * into arena slots, in the order the producer chooses ({@link IndexedSource}). Each batch holds three tensors: {@code data} (the sample), {@code label} (int64)
 * and {@code id} (int64 sample id), so consumers can verify what they receive.
 */
public final class SyntheticSource implements IndexedSource {
    public static final String DATA = "data";
    public static final String LABEL = "label";
    public static final String ID = "id";

    private final SyntheticSpec spec;
    private final BatchLayout layout;
    private final long delayNanos;
    /** Every sample's data, sample id order, where {@link #preload} generated them; else null. */
    private final MemorySegment preloaded;

    public SyntheticSource(SyntheticSpec spec, int batchSize) {
        this(spec, batchSize, Duration.ZERO);
    }

    /**
     * A source that also spends {@code delayPerBatch} on every batch, standing in for an expensive loader
     * (decoding, augmentation) in demos and tests.
     */
    public SyntheticSource(SyntheticSpec spec, int batchSize, Duration delayPerBatch) {
        this(spec, batchSize, delayPerBatch, null);
    }

    private SyntheticSource(SyntheticSpec spec, int batchSize, Duration delayPerBatch, MemorySegment preloaded) {
        this.spec = spec;
        this.delayNanos = delayPerBatch.toNanos();
        this.layout = new BatchLayout(
                List.of(
                        new TensorSpec(DATA, spec.dtype(), spec.shape()),
                        TensorSpec.of(LABEL, DType.INT64),
                        TensorSpec.of(ID, DType.INT64)),
                batchSize);
        this.preloaded = preloaded;
    }

    /**
     * The same source with every sample generated now, into memory of this process ({@link #preloadBytes} of it),
     * so that serving a batch costs one copy per sample rather than generating it: a data set already in memory, for
     * measuring the data plane alone. The samples, their order and the description are unchanged.
     *
     * @throws IllegalArgumentException if the data set does not fit in one memory segment
     */
    public SyntheticSource preload() {
        long bytes = preloadBytes(spec);
        MemorySegment all = Arena.ofAuto().allocate(Math.max(bytes, 1), 64);
        long sampleBytes = spec.sampleBytes();
        for (long id = 0; id < spec.samples(); id++) {
            spec.fill(id, all.asSlice(id * sampleBytes, sampleBytes));
        }
        return new SyntheticSource(spec, layout.batchSize(), Duration.ofNanos(delayNanos), all);
    }

    /** The memory {@link #preload()} takes for {@code spec}: every sample's data. */
    public static long preloadBytes(SyntheticSpec spec) {
        return Math.multiplyExact(spec.samples(), spec.sampleBytes());
    }

    /**
     * A source of the same samples in the seeded order ({@link SyntheticSpec#order(long)}) whatever consumers join:
     * the producer does not choose its order, so a consumer joining mid-epoch rolls. It gives each epoch a fresh
     * shuffle of everything, at the cost of late joiners' exact epochs.
     */
    public static BatchSource seeded(SyntheticSpec spec, int batchSize, Duration delayPerBatch) {
        return new SyntheticSource(spec, batchSize, delayPerBatch).seeded();
    }

    /** This source in the seeded order, as {@link #seeded(SyntheticSpec, int, Duration)} describes. */
    public BatchSource seeded() {
        SyntheticSource s = this;
        return new BatchSource() {
            @Override
            public BatchLayout layout() {
                return s.layout();
            }

            @Override
            public long samplesPerEpoch() {
                return s.samplesPerEpoch();
            }

            @Override
            public void emitEpoch(long epoch, BatchSink sink) throws InterruptedException {
                s.emitEpoch(epoch, spec.order(epoch), sink);
            }

            @Override
            public String description() {
                return spec.format() + ",order=seeded";
            }
        };
    }

    public SyntheticSpec spec() {
        return spec;
    }

    @Override
    public BatchLayout layout() {
        return layout;
    }

    @Override
    public long samplesPerEpoch() {
        return spec.samples();
    }

    @Override
    public int datasetSize() {
        return (int) spec.samples();
    }

    @Override
    public boolean shuffles() {
        return true;
    }

    @Override
    public OptionalLong shuffleSeed() {
        return OptionalLong.of(spec.seed());
    }

    @Override
    public SplittableRandom shuffleRandom(long epoch) {
        return spec.shuffleRandom(epoch);
    }

    /** Yes: a batch is generated (or copied) from its ids alone. */
    @Override
    public boolean loadsConcurrently() {
        return true;
    }

    @Override
    public void emitEpoch(long epoch, int[] order, BatchSink sink) throws InterruptedException {
        int b = layout.batchSize();
        long sampleBytes = spec.sampleBytes();
        for (int start = 0; start < order.length; start += b) {
            int n = Math.min(b, order.length - start);
            if (delayNanos > 0) {
                Thread.sleep(Duration.ofNanos(delayNanos));
            }
            SlotWriter slot = sink.claim();
            MemorySegment data = slot.tensor(0);
            MemorySegment label = slot.tensor(1);
            MemorySegment id = slot.tensor(2);
            for (int i = 0; i < n; i++) {
                long sampleId = order[start + i];
                if (preloaded != null) {
                    MemorySegment.copy(preloaded, sampleId * sampleBytes, data, i * sampleBytes, sampleBytes);
                } else {
                    spec.fill(sampleId, data.asSlice(i * sampleBytes, sampleBytes));
                }
                label.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, spec.label(sampleId));
                id.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, sampleId);
            }
            slot.publish(n);
        }
    }

    @Override
    public String description() {
        return spec.format() + ",order=" + SyntheticSpec.PRODUCER_ORDER;
    }
}
