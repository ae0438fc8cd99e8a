package io.tensorsocket.source;

import io.tensorsocket.Batch;
import io.tensorsocket.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;
import java.util.function.IntToLongFunction;

/**
 * Checks received batches of a synthetic source against the generator, sample by sample, and counts
 * per epoch what arrived: samples, distinct ids, duplicates, corrupt samples (wrong bytes or label) and samples out
 * of order. Call {@link #accept(Batch, long)} for every batch of an epoch, then {@link #finishEpoch()}.
 *
 * <p>Order: for a stream in seeded order ({@link SyntheticSpec#seededOrder(String)}) every sample must be the one
 * {@link SyntheticSpec#order(long)} puts at its stream position. Where the producer chooses the order at run time,
 * the position is checked instead: each batch of an epoch starts where the one before it ended.
 */
public final class SyntheticVerifier implements AutoCloseable {
    private final SyntheticSpec spec;
    private final boolean seededOrder;
    private long nextPosition = -1;
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

    /** A verifier of a stream in seeded order. */
    public SyntheticVerifier(SyntheticSpec spec) {
        this(spec, true);
    }

    /** A verifier of a stream whose order is seeded ({@code true}) or chosen by its producer at run time. */
    public SyntheticVerifier(SyntheticSpec spec, boolean seededOrder) {
        this.spec = spec;
        this.seededOrder = seededOrder;
        this.expected = scratchScope.allocate(Math.max(1, spec.sampleBytes()), 8);
        this.seen = new BitSet((int) spec.samples());
    }

    /**
     * Checks every sample of {@code batch}, including that it is the sample the producer emitted at its
     * stream position ({@code streamPosition}: producer epoch × samples per epoch + sample, of the batch's
     * first sample), so order is checked too.
     */
    public void accept(Batch batch, long streamPosition) {
        boolean contiguous = nextPosition < 0 || streamPosition == nextPosition;
        nextPosition = streamPosition + batch.size();
        check(batch, i -> streamPosition + i, contiguous);
    }

    /**
     * As {@link #accept(Batch, long)} for a consumer whose samples are not at consecutive stream positions (a rank of
     * a job): {@code positionOf} gives sample {@code i}'s. Where the producer chooses the order, the check is that the
     * positions rise through the epoch.
     */
    public void accept(Batch batch, IntToLongFunction positionOf) {
        boolean rising = true;
        for (int i = 0; i < batch.size(); i++) {
            long p = positionOf.applyAsLong(i);
            rising &= p >= nextPosition;
            nextPosition = p + 1;
        }
        check(batch, positionOf, rising);
    }

    private void check(Batch batch, IntToLongFunction positionOf, boolean inOrder) {
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
            if (seededOrder ? sampleId != expectedId(positionOf.applyAsLong(i)) : !inOrder) {
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
        nextPosition = -1;
        batches = samples = unique = duplicates = corrupt = outOfOrder = 0;
        return c;
    }

    @Override
    public void close() {
        scratchScope.close();
    }
}
