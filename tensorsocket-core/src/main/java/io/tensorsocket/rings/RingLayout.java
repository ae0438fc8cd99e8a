package io.tensorsocket.rings;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The layout of a producer's rings file ({@link DescriptorRings}), as named offsets and little-endian
 * accessors; docs/PROTOCOL.md §4a states the protocol around it, {@code docs/test-vectors/rings-header.txt} pins a
 * header and the Python client reads the same.
 *
 * <pre>
 *  offset 0            64                   64 + ringBytes            64 + R × ringBytes
 *  ┌───────────────────┬────────────────────┬─────┬────────────────────┐
 *  │ header            │ ring 0             │ ... │ ring R-1           │
 *  └───────────────────┴────────────────────┴─────┴────────────────────┘
 *
 *  header:  0 magic "TSRINGS1"   8 version u32   12 rings u32 (R)   16 sessionId i64 (as in the arena)
 *          24 capacity u32 (entries per ring, a power of two)   28 entryBytes u32 (64)
 *
 *  ring (ringBytes = 128 + capacity × 64):
 *   ┌── written by the producer ─────────────────────────────┬── written by the consumer ─────────┬────────────
 *   │ 0 owner i32 │ 4 doorbell i32 │ 8 tail i64 │ (to 64)   │ 64 cursor i64 │ 72 parked i32 │   │ 128 entries
 *   └────────────────────────────────────────────────────────┴────────────────────────────────────┴────────────
 *   owner     consumer id the ring serves; set when the producer gives the ring to a consumer, never cleared
 *   doorbell  the futex word: +1 after every entry, and by the consumer's own watchdog when the socket has
 *             news; a consumer sleeps on it, so any change wakes it
 *   tail      entries published since the ring was given to its owner (entry k sits at k mod capacity)
 *   cursor    (owner &lt;&lt; 32) | entries taken mod 2^32: how far the consumer read, tagged with who read
 *   parked    1 while the consumer sleeps on the doorbell or is about to; the producer wakes only then
 *   entry     one control frame as on the socket (BATCH, EPOCH_END or END), zero-padded to 64 bytes
 * </pre>
 */
public final class RingLayout {
    public static final long MAGIC = 0x3153474E49525354L; // "TSRINGS1" read little-endian
    public static final int VERSION = 1;
    public static final int ENTRY_BYTES = 64;

    /** The file header's fields. */
    public static final long HEADER_BYTES = 64;

    static final long MAGIC_OFFSET = 0;
    static final long VERSION_OFFSET = 8;
    static final long RINGS_OFFSET = 12;
    static final long SESSION_OFFSET = 16;
    static final long CAPACITY_OFFSET = 24;
    static final long ENTRY_BYTES_OFFSET = 28;

    /** A ring's header fields, from the ring's start; the producer's in the first 64 bytes, the consumer's in the next. */
    public static final long RING_HEADER_BYTES = 128;

    public static final long OWNER = 0;
    public static final long DOORBELL = 4;
    public static final long TAIL = 8;
    public static final long CURSOR = 64;
    public static final long PARKED = 72;

    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Atomic access to a ring's words (aligned, little-endian). */
    static final VarHandle INT = I32.varHandle();

    static final VarHandle LONG = I64.varHandle();

    private RingLayout() {}

    /** Entries per ring for an arena of {@code slotCount} slots: the next power of two ≥ 2 × slotCount + 2. */
    public static int capacityFor(int slotCount) {
        return Integer.highestOneBit(2 * slotCount + 1) << 1;
    }

    /** Bytes of one ring of {@code capacity} entries. */
    public static long ringBytes(int capacity) {
        return RING_HEADER_BYTES + (long) capacity * ENTRY_BYTES;
    }

    /** Bytes of a rings file of {@code rings} rings. */
    public static long fileBytes(int rings, int capacity) {
        return HEADER_BYTES + rings * ringBytes(capacity);
    }

    /** Where ring {@code index} starts in the file. */
    public static long ringOffset(int index, int capacity) {
        return HEADER_BYTES + index * ringBytes(capacity);
    }

    /** Where entry {@code k} (counted since the ring was given) lies in its ring. */
    public static long entryOffset(long k, int capacity) {
        return RING_HEADER_BYTES + (k & (capacity - 1)) * ENTRY_BYTES;
    }

    /** Writes the file header. */
    public static void writeHeader(MemorySegment file, int rings, long sessionId, int capacity) {
        file.set(I64, MAGIC_OFFSET, MAGIC);
        file.set(I32, VERSION_OFFSET, VERSION);
        file.set(I32, RINGS_OFFSET, rings);
        file.set(I64, SESSION_OFFSET, sessionId);
        file.set(I32, CAPACITY_OFFSET, capacity);
        file.set(I32, ENTRY_BYTES_OFFSET, ENTRY_BYTES);
    }

    /**
     * What is wrong with the file header {@code head} of a file of {@code size} bytes for session {@code sessionId},
     * or null if nothing is.
     */
    public static String problem(MemorySegment head, long size, long sessionId) {
        int version = head.get(I32, VERSION_OFFSET);
        int rings = head.get(I32, RINGS_OFFSET);
        int capacity = head.get(I32, CAPACITY_OFFSET);
        return head.get(I64, MAGIC_OFFSET) != MAGIC
                ? "it is not a TensorSocket rings file (bad magic)"
                : version != VERSION
                        ? "rings layout version " + version + ", this library reads version " + VERSION
                        : head.get(I64, SESSION_OFFSET) != sessionId
                                ? "it belongs to another producer session"
                                : rings < 1
                                                || capacity < 4
                                                || Integer.bitCount(capacity) != 1
                                                || head.get(I32, ENTRY_BYTES_OFFSET) != ENTRY_BYTES
                                                || size < fileBytes(rings, capacity)
                                        ? "its geometry is invalid"
                                        : null;
    }

    /** The ring count of a valid header. */
    public static int rings(MemorySegment head) {
        return head.get(I32, RINGS_OFFSET);
    }

    /** The entries per ring of a valid header. */
    public static int capacity(MemorySegment head) {
        return head.get(I32, CAPACITY_OFFSET);
    }
}
