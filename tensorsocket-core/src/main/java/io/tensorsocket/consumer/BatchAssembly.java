package io.tensorsocket.consumer;

import io.tensorsocket.Batch;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.stream.ConsumerStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns a {@link ConsumerStream.BatchPlan} into the {@link Batch} handed out: a plan inside one slot becomes
 * read-only views of that slot's regions (zero-copy); one that spans slots is copied, piece by piece, into
 * this consumer's gather buffers, and the batch views those. Each batch has a lease of its own, so its views
 * fail once it is released. A gather buffer is allocated (and touched once) when a batch first needs it: a
 * consumer at the loader's batch size never does.
 */
final class BatchAssembly implements AutoCloseable {

    /** Where tensor {@code tensor} of slot {@code slot} lies (the arena's region). */
    @FunctionalInterface
    interface SlotRegions {
        MemorySegment region(int slot, int tensor);
    }

    private final List<TensorSpec> specs;
    private final long[] sampleBytes;
    private final int batchSize;
    private final SlotRegions slots;
    private final boolean confined;
    private final Arena gatherScope = Arena.ofShared();
    private final MemorySegment[] gather;

    /** With {@code confined}, each batch's lease is confined to the thread that assembles it (see {@link Lease}). */
    BatchAssembly(List<TensorSpec> specs, int batchSize, SlotRegions slots, boolean confined) {
        this.confined = confined;
        this.specs = specs;
        this.sampleBytes = specs.stream().mapToLong(TensorSpec::sampleBytes).toArray();
        this.batchSize = batchSize;
        this.slots = slots;
        this.gather = new MemorySegment[specs.size()];
    }

    /**
     * The batch of {@code plan}. {@code beforeGather} runs before a gather buffer is refilled (the views of
     * an earlier gathered batch must be dead by then); {@code onClose} runs once when the batch is released.
     */
    Batch assemble(ConsumerStream.BatchPlan plan, Runnable beforeGather, Runnable onClose) {
        int n = plan.samples();
        if (!plan.single()) {
            beforeGather.run();
        }
        List<MemorySegment> views = new ArrayList<>(specs.size());
        for (int t = 0; t < specs.size(); t++) {
            long sb = sampleBytes[t];
            if (plan.single()) {
                ConsumerStream.Piece p = plan.pieces().getFirst();
                views.add(slots.region(p.slot(), t).asSlice(p.offset() * sb, n * sb));
            } else {
                MemorySegment into = gatherBuffer(t);
                for (ConsumerStream.Piece p : plan.pieces()) {
                    MemorySegment.copy(
                            slots.region(p.slot(), t), p.offset() * sb, into, p.destOffset() * sb, p.samples() * sb);
                }
                views.add(into.asSlice(0, n * sb));
            }
        }
        return Batch.lent(
                specs,
                views,
                n,
                plan.epoch(),
                plan.index(),
                plan.sampleStart(),
                "batch " + plan.index() + " of epoch " + plan.epoch(),
                onClose,
                confined);
    }

    private MemorySegment gatherBuffer(int t) {
        if (gather[t] == null) {
            gather[t] = gatherScope.allocate(Math.max(1, sampleBytes[t] * batchSize), 64);
            gather[t].fill((byte) 0);
        }
        return gather[t];
    }

    /** Frees the gather buffers; a batch still viewing one must be released first. */
    @Override
    public void close() {
        gatherScope.close();
    }
}
