package io.tensorsocket;

import java.lang.foreign.MemorySegment;

/**
 * A claimed arena slot that a source fills in place. Sample {@code i} of tensor {@code t} lives at
 * {@code tensor(t).asSlice(i * sampleBytes, sampleBytes)}, little-endian, row-major. Fill samples
 * {@code [0, n)} of every tensor, from any threads, then call {@link #publish(int)} once.
 */
public interface SlotWriter {

    /** Samples the slot holds: the source's batch size. */
    int capacity();

    /** Writable memory for a full batch of tensor {@code index} (in layout order). */
    MemorySegment tensor(int index);

    /** Writable memory for a full batch of the tensor called {@code name}. */
    MemorySegment tensor(String name);

    /**
     * Publishes the first {@code samples} samples as the next batch, once every earlier claim is
     * published too. The slot must not be written afterwards.
     */
    void publish(int samples);

    /**
     * Where this slot starts in the producer's arena file, for a writer in another process that maps the
     * file itself (an external feeder). Tensor regions follow at the offsets docs/PROTOCOL.md defines.
     */
    default long arenaOffset() {
        throw new UnsupportedOperationException("this slot writer does not know its place in an arena file");
    }
}
