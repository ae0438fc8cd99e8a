package io.tensorsocket.arena;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Layout of the arena file, as specified in docs/PROTOCOL.md; this class is its Java side. All integers
 * are little-endian.
 *
 * <pre>
 *  offset 0                                  HEADER_BYTES (4096)
 *  ┌──────────────────────────────────────────┬───────────────┬───────────────┬─────┬─────────────────┐
 *  │ header                                   │ slot 0        │ slot 1        │ ... │ slot N-1        │
 *  └──────────────────────────────────────────┴───────────────┴───────────────┴─────┴─────────────────┘
 *                                              ◄─ slotBytes ─►  (a multiple of 4096, so slots share no page)
 *
 *  header:
 *   0  magic        8 B  "TSARENA1"
 *   8  version      u32  LAYOUT_VERSION
 *  12  headerBytes  u32  4096
 *  16  sessionId    i64  random per producer start; the WELCOME message carries the same value
 *  24  producerPid  i64
 *  32  slotCount    u32  N
 *  36  tensorCount  u32  T
 *  40  slotBytes    i64
 *  48  batchSize    u32  samples a slot holds (the loader's batch size B)
 *  52  (zero up to 4096)
 *
 *  slot (for tensors t0..tT-1 of the source's batch layout):
 *  ┌──────────────────────────┬─────┬──────────────────────────┬─────┬─────────┐
 *  │ t0: B samples, row-major │ pad │ t1: B samples            │ pad │ ...     │
 *  └──────────────────────────┴─────┴──────────────────────────┴─────┴─────────┘
 *   each region starts at a multiple of 64 bytes; a batch of n &lt; B samples fills the first n
 *   samples of every region, so a short last batch has the same offsets as a full one.
 * </pre>
 *
 * Only the producer writes the file; consumers map it read-only. Which slot holds which batch, and
 * who still reads it, travels on the control socket and lives in the producer's heap, never here.
 */
public record ArenaLayout(BatchLayout batch, int slotCount, long slotBytes, long[] regionOffsets) {
    public static final long MAGIC = 0x31414E4552415354L; // "TSARENA1" read little-endian
    public static final int LAYOUT_VERSION = 1;
    public static final int HEADER_BYTES = 4096;
    static final long PAGE = 4096;
    static final long REGION_ALIGN = 64;

    static final long MAGIC_OFFSET = 0;
    static final long VERSION_OFFSET = 8;
    static final long HEADER_BYTES_OFFSET = 12;
    static final long SESSION_OFFSET = 16;
    static final long PID_OFFSET = 24;
    static final long SLOT_COUNT_OFFSET = 32;
    static final long TENSOR_COUNT_OFFSET = 36;
    static final long SLOT_BYTES_OFFSET = 40;
    static final long BATCH_SIZE_OFFSET = 48;

    /** The layout for {@code slotCount} slots of batches shaped like {@code batch}. */
    public static ArenaLayout of(BatchLayout batch, int slotCount) {
        List<TensorSpec> ts = batch.tensors();
        long[] offsets = new long[ts.size()];
        long off = 0;
        for (int i = 0; i < ts.size(); i++) {
            offsets[i] = off;
            off = alignUp(off + Math.multiplyExact(ts.get(i).sampleBytes(), (long) batch.batchSize()), REGION_ALIGN);
        }
        long slotBytes = Math.max(PAGE, alignUp(off, PAGE));
        return new ArenaLayout(batch, slotCount, slotBytes, offsets);
    }

    /** Bytes one slot needs for {@code batch}. */
    public static long slotBytesFor(BatchLayout batch) {
        return of(batch, 1).slotBytes();
    }

    /** How many slots fit into {@code arenaBytes}. */
    public static long slotsThatFit(BatchLayout batch, long arenaBytes) {
        return Math.max(0, (arenaBytes - HEADER_BYTES) / slotBytesFor(batch));
    }

    /** Total file size. */
    public long fileBytes() {
        return HEADER_BYTES + Math.multiplyExact(slotBytes, (long) slotCount);
    }

    /** File offset of slot {@code slot}. */
    public long slotOffset(int slot) {
        return HEADER_BYTES + slotBytes * slot;
    }

    /** Offset of tensor {@code tensor}'s region inside a slot. */
    public long regionOffset(int tensor) {
        return regionOffsets[tensor];
    }

    /** Bytes of tensor {@code tensor}'s region (a full batch of it). */
    public long regionBytes(int tensor) {
        return batch.tensors().get(tensor).sampleBytes() * batch.batchSize();
    }

    static long alignUp(long v, long a) {
        return (v + a - 1) / a * a;
    }

    void writeHeader(MemorySegment arena, long sessionId, long pid) {
        arena.asSlice(0, HEADER_BYTES).fill((byte) 0);
        arena.set(ValueLayout.JAVA_LONG_UNALIGNED, MAGIC_OFFSET, MAGIC);
        arena.set(ValueLayout.JAVA_INT_UNALIGNED, VERSION_OFFSET, LAYOUT_VERSION);
        arena.set(ValueLayout.JAVA_INT_UNALIGNED, HEADER_BYTES_OFFSET, HEADER_BYTES);
        arena.set(ValueLayout.JAVA_LONG_UNALIGNED, SESSION_OFFSET, sessionId);
        arena.set(ValueLayout.JAVA_LONG_UNALIGNED, PID_OFFSET, pid);
        arena.set(ValueLayout.JAVA_INT_UNALIGNED, SLOT_COUNT_OFFSET, slotCount);
        arena.set(
                ValueLayout.JAVA_INT_UNALIGNED,
                TENSOR_COUNT_OFFSET,
                batch.tensors().size());
        arena.set(ValueLayout.JAVA_LONG_UNALIGNED, SLOT_BYTES_OFFSET, slotBytes);
        arena.set(ValueLayout.JAVA_INT_UNALIGNED, BATCH_SIZE_OFFSET, batch.batchSize());
    }

    /**
     * Checks a mapped arena's header against what the producer announced.
     *
     * @return null if it matches, else what differs
     */
    String verifyHeader(MemorySegment arena, long sessionId) {
        if (arena.byteSize() < HEADER_BYTES) {
            return "the file is " + arena.byteSize() + " bytes, smaller than an arena header";
        }
        if (arena.get(ValueLayout.JAVA_LONG_UNALIGNED, MAGIC_OFFSET) != MAGIC) {
            return "the file is not a TensorSocket arena (bad magic)";
        }
        int version = arena.get(ValueLayout.JAVA_INT_UNALIGNED, VERSION_OFFSET);
        if (version != LAYOUT_VERSION) {
            return "arena layout version " + version + ", this library reads version " + LAYOUT_VERSION;
        }
        if (arena.get(ValueLayout.JAVA_LONG_UNALIGNED, SESSION_OFFSET) != sessionId) {
            return "the arena belongs to another producer session (the producer was restarted)";
        }
        if (arena.get(ValueLayout.JAVA_INT_UNALIGNED, SLOT_COUNT_OFFSET) != slotCount
                || arena.get(ValueLayout.JAVA_LONG_UNALIGNED, SLOT_BYTES_OFFSET) != slotBytes
                || arena.get(ValueLayout.JAVA_INT_UNALIGNED, BATCH_SIZE_OFFSET) != batch.batchSize()
                || arena.get(ValueLayout.JAVA_INT_UNALIGNED, TENSOR_COUNT_OFFSET)
                        != batch.tensors().size()) {
            return "the arena's slot geometry differs from what the producer announced";
        }
        if (arena.byteSize() < fileBytes()) {
            return "the arena file is " + arena.byteSize() + " bytes but " + fileBytes() + " were announced";
        }
        return null;
    }
}
