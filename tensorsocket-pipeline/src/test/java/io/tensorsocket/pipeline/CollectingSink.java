package io.tensorsocket.pipeline;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A sink that behaves as the producer's contract says (claims published in claim order, a bound on
 * unpublished claims) and keeps a copy of every published batch. Slot memory is filled with 0x7F
 * before each claim, so a sample the source forgot to write shows up.
 */
final class CollectingSink implements BatchSink, AutoCloseable {
    /** One published batch: the bytes of the first {@code samples} samples of each tensor. */
    record Received(List<byte[]> tensors, int samples) {
        byte[] tensor(int i) {
            return tensors.get(i);
        }

        float floatAt(int tensor, long index) {
            return MemorySegment.ofArray(tensors.get(tensor)).getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, index);
        }

        long longAt(int tensor, long index) {
            return MemorySegment.ofArray(tensors.get(tensor)).getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index);
        }
    }

    private final BatchLayout layout;
    private final int claimsAhead;
    private final boolean heap;
    private final Arena arena = Arena.ofShared();
    private final ArrayDeque<Slot> unpublished = new ArrayDeque<>();
    private final ArrayDeque<MemorySegment[]> free = new ArrayDeque<>();
    private final List<Received> received = new ArrayList<>();
    private int maxOutstanding;

    /** Native slots. */
    CollectingSink(BatchLayout layout, int claimsAhead) {
        this(layout, claimsAhead, false);
    }

    /** Heap slots if {@code heap}, native otherwise. */
    CollectingSink(BatchLayout layout, int claimsAhead, boolean heap) {
        this.layout = layout;
        this.claimsAhead = claimsAhead;
        this.heap = heap;
    }

    @Override
    public void put(Batch batch) {
        throw new AssertionError("the pipeline must write in place, not call put()");
    }

    @Override
    public int claimsAhead() {
        return claimsAhead;
    }

    @Override
    public synchronized SlotWriter claim() {
        if (unpublished.size() >= claimsAhead) {
            throw new AssertionError(
                    "source holds " + unpublished.size() + " unpublished claims; the limit is " + claimsAhead);
        }
        MemorySegment[] mem = free.isEmpty() ? allocate() : free.pop();
        for (MemorySegment m : mem) {
            m.fill((byte) 0x7F);
        }
        Slot s = new Slot(mem);
        unpublished.addLast(s);
        maxOutstanding = Math.max(maxOutstanding, unpublished.size());
        return s;
    }

    private MemorySegment[] allocate() {
        MemorySegment[] mem = new MemorySegment[layout.tensors().size()];
        for (int i = 0; i < mem.length; i++) {
            long bytes = layout.tensors().get(i).sampleBytes() * layout.batchSize();
            mem[i] = heap ? MemorySegment.ofArray(new byte[(int) bytes]) : arena.allocate(bytes, 64);
        }
        return mem;
    }

    private synchronized void published(Slot s, int samples) {
        if (s.samples != 0) {
            throw new AssertionError("publish called twice on one slot");
        }
        if (samples < 1 || samples > layout.batchSize()) {
            throw new AssertionError("published " + samples + " samples; a batch holds 1 to " + layout.batchSize());
        }
        s.samples = samples;
        while (!unpublished.isEmpty() && unpublished.peekFirst().samples > 0) {
            Slot head = unpublished.removeFirst();
            List<byte[]> copies = new ArrayList<>();
            for (int i = 0; i < head.mem.length; i++) {
                TensorSpec spec = layout.tensors().get(i);
                copies.add(head.mem[i]
                        .asSlice(0, spec.sampleBytes() * head.samples)
                        .toArray(ValueLayout.JAVA_BYTE));
            }
            received.add(new Received(copies, head.samples));
            free.push(head.mem);
        }
    }

    synchronized List<Received> received() {
        return List.copyOf(received);
    }

    /** All published batches of tensor {@code index} concatenated. */
    synchronized byte[] concatenated(int index) {
        var out = new ByteArrayOutputStream();
        for (Received r : received) {
            out.writeBytes(r.tensor(index));
        }
        return out.toByteArray();
    }

    synchronized int maxOutstanding() {
        return maxOutstanding;
    }

    synchronized int unpublished() {
        return unpublished.size();
    }

    synchronized void clear() {
        received.clear();
    }

    @Override
    public void close() {
        arena.close();
    }

    private final class Slot implements SlotWriter {
        final MemorySegment[] mem;
        int samples;

        Slot(MemorySegment[] mem) {
            this.mem = mem;
        }

        @Override
        public int capacity() {
            return layout.batchSize();
        }

        @Override
        public MemorySegment tensor(int index) {
            return mem[index];
        }

        @Override
        public MemorySegment tensor(String name) {
            int i = layout.indexOf(name);
            if (i < 0) {
                throw new IllegalArgumentException("no tensor " + name);
            }
            return mem[i];
        }

        @Override
        public void publish(int samples) {
            published(this, samples);
        }
    }
}
