package io.tensorsocket.source;

import io.tensorsocket.Batch;
import io.tensorsocket.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;

/**
 * Checks received batches of a synthetic source against the generator, sample by sample, and counts
 * per epoch what arrived: samples, distinct ids, duplicates and corrupt samples (wrong bytes or label).
 * Call {@link #accept(Batch)} for every batch of an epoch, then {@link #finishEpoch()}.
 */
public final class SyntheticVerifier implements AutoCloseable {
    private final SyntheticSpec spec;
    private final Arena scratchScope = Arena.ofConfined();
    private final MemorySegment expected;
    private BitSet seen;
    private long batches;
    private long samples;
    private long unique;
    private long duplicates;
    private long corrupt;
    private long outOfOrder;
    private long orderEpoch = -1;
    private int[] order;

    private long expectedId(long streamPosition) {
        long epoch = streamPosition / spec.samples();
        if (epoch != orderEpoch) {
            order = spec.order(epoch);
            orderEpoch = epoch;
        }
        return order[(int) (streamPosition % spec.samples())];
    }

    /** Totals of one epoch. */
    public record EpochCounts(long batches, long samples, long unique, long duplicates, long corrupt, long outOfOrder) {
        /**
         * Whether a full producer epoch of {@code expectedSamples} arrived exactly once, in order, intact.
         */
        public boolean exact(long expectedSamples) {
            return samples == expectedSamples && unique == expectedSamples && duplicates == 0 && intact();
        }

        /** Whether every sample had the right bytes and came at the position the producer emitted it. */
        public boolean intact() {
            return corrupt == 0 && outOfOrder == 0;
        }
    }

    public SyntheticVerifier(SyntheticSpec spec) {
        this.spec = spec;
        this.expected = scratchScope.allocate(Math.max(1, spec.sampleBytes()), 8);
        this.seen = new BitSet((int) spec.samples());
    }

    /**
     * Checks every sample of {@code batch}, including that it is the sample the producer emitted at its
     * stream position ({@code streamPosition}: producer epoch × samples per epoch + sample, of the batch's
     * first sample), so order is checked too.
     */
    public void accept(Batch batch, long streamPosition) {
        Tensor data = batch.tensor(SyntheticSource.DATA);
        Tensor label = batch.tensor(SyntheticSource.LABEL);
        Tensor id = batch.tensor(SyntheticSource.ID);
        long sb = spec.sampleBytes();
        MemorySegment got = data.data();
        batches++;
        for (int i = 0; i < batch.size(); i++) {
            long sampleId = id.getLong(i);
            samples++;
            if (sampleId < 0 || sampleId >= spec.samples()) {
                corrupt++;
                continue;
            }
            if (sampleId != expectedId(streamPosition + i)) {
                outOfOrder++;
            }
            if (seen.get((int) sampleId)) {
                duplicates++;
            } else {
                seen.set((int) sampleId);
                unique++;
            }
            spec.fill(sampleId, expected);
            if (MemorySegment.mismatch(got, i * sb, (i + 1) * sb, expected, 0, sb) != -1
                    || label.getLong(i) != spec.label(sampleId)) {
                corrupt++;
            }
        }
    }

    /** The counts since the last call, and a fresh start for the next epoch. */
    public EpochCounts finishEpoch() {
        EpochCounts c = new EpochCounts(batches, samples, unique, duplicates, corrupt, outOfOrder);
        seen = new BitSet((int) spec.samples());
        batches = samples = unique = duplicates = corrupt = outOfOrder = 0;
        return c;
    }

    @Override
    public void close() {
        scratchScope.close();
    }
}
