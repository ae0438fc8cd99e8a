package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchSink;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.BulkCopy;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.ObjIntConsumer;

/** A claimed slot, which the source fills and then publishes; claims are published in claim order. */
final class SlotClaim implements SlotWriter {
    final long seq;
    final int slot;
    /** Samples published, 0 until then. */
    volatile int samples;

    private final ArenaLayout layout;
    private final MemorySegment slotMemory;
    private final ObjIntConsumer<SlotClaim> publisher;

    SlotClaim(long seq, int slot, ArenaLayout layout, MemorySegment slotMemory, ObjIntConsumer<SlotClaim> publisher) {
        this.seq = seq;
        this.slot = slot;
        this.layout = layout;
        this.slotMemory = slotMemory;
        this.publisher = publisher;
    }

    @Override
    public int capacity() {
        return layout.batch().batchSize();
    }

    /** Puts {@code batch} (checked against {@code layout}) into the next slot {@code sink} claims, and publishes it. */
    static void put(BatchSink sink, ArenaLayout layout, Batch batch) {
        layout.batch().check(batch);
        SlotClaim c = (SlotClaim) sink.claim();
        c.copy(batch);
        c.publish(batch.size());
    }

    /** Copies every tensor of {@code batch}, which fits the layout, into this slot. */
    void copy(Batch batch) {
        List<TensorSpec> tensors = layout.batch().tensors();
        for (int t = 0; t < tensors.size(); t++) {
            Tensor src = batch.tensor(tensors.get(t).name());
            BulkCopy.copy(src.data(), 0, tensor(t), 0, src.byteSize());
        }
    }

    @Override
    public MemorySegment tensor(int index) {
        return slotMemory.asSlice(layout.regionOffset(index), layout.regionBytes(index));
    }

    @Override
    public MemorySegment tensor(String name) {
        int i = layout.batch().indexOf(name);
        if (i < 0) {
            throw new IllegalArgumentException("no tensor '" + name + "' in the source's layout "
                    + layout.batch().tensors());
        }
        return tensor(i);
    }

    @Override
    public long arenaOffset() {
        return layout.slotOffset(slot);
    }

    @Override
    public void publish(int samples) {
        publisher.accept(this, samples);
    }
}
