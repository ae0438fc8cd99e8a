package io.tensorsocket.rings;

import static io.tensorsocket.rings.RingLayout.CURSOR;
import static io.tensorsocket.rings.RingLayout.DOORBELL;
import static io.tensorsocket.rings.RingLayout.HEADER_BYTES;
import static io.tensorsocket.rings.RingLayout.INT;
import static io.tensorsocket.rings.RingLayout.LONG;
import static io.tensorsocket.rings.RingLayout.OWNER;
import static io.tensorsocket.rings.RingLayout.PARKED;
import static io.tensorsocket.rings.RingLayout.TAIL;
import static io.tensorsocket.rings.RingLayout.fileBytes;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.arena.SpaceReservation;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.function.Predicate;

/**
 * The rings file: one descriptor ring per consumer that asked for one, through which the producer hands it
 * each stream event (a batch, an epoch's end, the stream's end) without a socket write, and a futex word on
 * which that consumer sleeps while it waits. Its layout is {@link RingLayout}'s.
 *
 *
 * <p>The producer writes an entry, publishes it with a release store of {@code tail}, adds 1 to
 * {@code doorbell} and only then reads {@code parked}; a consumer about to sleep stores {@code parked},
 * and sleeps only while {@code doorbell} still holds what it read before it last found the ring empty.
 * Both sides store before they read the other's word with sequentially consistent accesses, so a wake-up
 * cannot be lost: either the producer sees {@code parked}, or the consumer's futex wait sees the new
 * doorbell and returns at once.
 *
 * <p>A ring cannot overflow: a consumer holds every batch it has not yet read, the arena has
 * {@code slotCount} slots, and each batch is followed by at most one epoch end, so capacity is at least
 * {@code 2 × slotCount + 2}. The producer still checks {@code cursor} and refuses to overwrite.
 *
 * <p>A consumer that was evicted and resumes may find its ring given to someone else: it reads
 * {@code owner} after every entry and stops at the first that is not its own.
 */
public final class DescriptorRings implements AutoCloseable {
    public static final int ENTRY_BYTES = RingLayout.ENTRY_BYTES;
    /**
     * How many consumers of one producer can have a ring unless told otherwise; later ones are served over
     * their socket. A ring takes 128 to 256 bytes per arena slot, so 16 of them add a few percent to an arena
     * of small batches, where every byte of /dev/shm may count (a container's is 64 MB by default).
     */
    public static final int DEFAULT_RINGS = 16;

    private final Arena scope;
    private final MemorySegment map;
    private final int rings;
    private final int capacity;
    private final long ringBytes;

    private DescriptorRings(Arena scope, MemorySegment map, int rings, int capacity) {
        this.scope = scope;
        this.map = map;
        this.rings = rings;
        this.capacity = capacity;
        this.ringBytes = RingLayout.ringBytes(capacity);
    }

    /** Entries per ring for an arena of {@code slotCount} slots: the next power of two ≥ 2 × slotCount + 2. */
    public static int capacityFor(int slotCount) {
        return RingLayout.capacityFor(slotCount);
    }

    /** Creates the rings file of a producer (0600, space reserved first), maps it and pre-touches it. */
    public static DescriptorRings create(Path file, int rings, int slotCount, long sessionId) throws IOException {
        int capacity = capacityFor(slotCount);
        long bytes = fileBytes(rings, capacity);
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Arena scope = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            SpaceReservation.reserve(file, bytes);
            ch.truncate(bytes);
            MemorySegment map = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, scope);
            map.fill((byte) 0);
            RingLayout.writeHeader(map, rings, sessionId, capacity);
            return new DescriptorRings(scope, map, rings, capacity);
        } catch (IOException | RuntimeException e) {
            scope.close();
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /**
     * Maps a producer's rings file read-write (a consumer writes its cursor and parked flag) and checks it
     * against the session the producer announced.
     *
     * @throws ProtocolException if the file is not that producer's rings file
     */
    public static DescriptorRings open(Path file, long sessionId) throws IOException {
        Arena scope = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena headerScope = Arena.ofConfined()) {
            long size = ch.size();
            if (size < HEADER_BYTES) {
                throw new ProtocolException("rings file " + file + " is " + size + " bytes, smaller than its header");
            }
            MemorySegment head = ch.map(FileChannel.MapMode.READ_ONLY, 0, HEADER_BYTES, headerScope);
            String problem = RingLayout.problem(head, size, sessionId);
            if (problem != null) {
                throw new ProtocolException(
                        "rings file " + file + " does not match the producer's announcement: " + problem);
            }
            int rings = RingLayout.rings(head);
            int capacity = RingLayout.capacity(head);
            MemorySegment map = ch.map(FileChannel.MapMode.READ_WRITE, 0, fileBytes(rings, capacity), scope);
            return new DescriptorRings(scope, map, rings, capacity);
        } catch (IOException | RuntimeException e) {
            scope.close();
            throw e;
        }
    }

    /**
     * Unmaps the file. A thread still asleep on a doorbell of it wakes within its bounded wait; futex calls
     * take words by address, so they never keep this from closing.
     */
    @Override
    public void close() {
        scope.close();
    }

    public int rings() {
        return rings;
    }

    public int capacity() {
        return capacity;
    }

    private MemorySegment ring(int index) {
        if (index < 0 || index >= rings) {
            throw new ProtocolException("ring " + index + " outside the " + rings + " rings of this producer");
        }
        return map.asSlice(RingLayout.ringOffset(index, capacity), ringBytes);
    }

    /** The producer's end of ring {@code index}. */
    public Writer writer(int index) {
        return new Writer(ring(index));
    }

    /** Consumer {@code owner}'s end of ring {@code index}; call only after the producer gave it that ring. */
    public Reader reader(int index, int owner) {
        return new Reader(ring(index), owner);
    }

    /** What both ends do with the doorbell. */
    public abstract class End {
        final MemorySegment ring;
        final long doorbell;

        End(MemorySegment ring) {
            this.ring = ring;
            this.doorbell = ring.address() + DOORBELL;
        }

        /** Entries the ring holds. */
        public int capacity() {
            return capacity;
        }

        long entryOffset(long k) {
            return RingLayout.entryOffset(k, capacity);
        }

        /** Rings the doorbell: a sleeping consumer wakes (called after publishing, or when the socket has news). */
        @SuppressWarnings("ReachabilityFenceUsage") // the fence keeps the ring mapped through the wake, no later
        public void knock(Futex futex) {
            INT.getAndAdd(ring, DOORBELL, 1); // a volatile write, ordered before the read of parked
            if ((int) INT.getVolatile(ring, PARKED) != 0) {
                futex.wake(doorbell, Integer.MAX_VALUE);
                Reference.reachabilityFence(ring);
            }
        }
    }

    /** The producer's end: publishes entries to one consumer. Used under the producer's lock only. */
    public final class Writer extends End {
        private final byte[] scratch = new byte[ENTRY_BYTES];
        private final ByteBuffer frame = ByteBuffer.wrap(scratch).order(ByteOrder.LITTLE_ENDIAN);
        private final MemorySegment scratchSegment = MemorySegment.ofArray(scratch);
        private int owner;
        private long tail;

        Writer(MemorySegment ring) {
            super(ring);
        }

        /** Gives the ring to consumer {@code owner}, starting it empty. Before that consumer hears of it. */
        public void claim(int owner) {
            this.owner = owner;
            this.tail = 0;
            INT.setVolatile(ring, OWNER, owner);
            LONG.setVolatile(ring, TAIL, 0L);
            LONG.setVolatile(ring, CURSOR, (long) owner << 32);
            INT.setVolatile(ring, PARKED, 0);
        }

        /** A scratch buffer of one entry's size for the caller to encode the next frame into (cleared). */
        public ByteBuffer frame() {
            return frame.clear();
        }

        /**
         * Publishes the frame in {@link #frame()} (written from position 0 up to its position) and wakes the
         * consumer if it sleeps.
         *
         * @return false if the ring is full (the consumer has not read {@link #capacity()} entries)
         */
        public boolean publish(Futex futex) {
            long cursor = (long) LONG.getVolatile(ring, CURSOR);
            if ((int) (cursor >>> 32) == owner && (int) tail - (int) cursor >= capacity) {
                return false;
            }
            Arrays.fill(scratch, frame.position(), ENTRY_BYTES, (byte) 0);
            MemorySegment.copy(scratchSegment, 0, ring, entryOffset(tail), ENTRY_BYTES);
            LONG.setRelease(ring, TAIL, ++tail);
            knock(futex);
            return true;
        }
    }

    /** A consumer's end: takes its entries in order and sleeps on the doorbell. Used by one thread at a time. */
    public final class Reader extends End {
        private final int owner;
        private final MemorySegment entry = MemorySegment.ofArray(new byte[ENTRY_BYTES]);
        private final ByteBuffer entryFrame = entry.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        private long head;

        Reader(MemorySegment ring, int owner) {
            super(ring);
            this.owner = owner;
        }

        /** Whether an entry waits to be taken. */
        public boolean ready() {
            return (long) LONG.getAcquire(ring, TAIL) != head;
        }

        /**
         * The next entry's frame (valid until the next call of this or {@link #anyUnread}), or null if none is
         * published.
         *
         * @throws RingTakenException if the producer has given this ring to another consumer
         */
        public ByteBuffer poll() {
            long tail = (long) LONG.getAcquire(ring, TAIL);
            if (tail == head) {
                checkOwner();
                return null;
            }
            if (tail < head || tail - head > capacity) {
                checkOwner();
                throw new ProtocolException("descriptor ring holds " + (tail - head) + " entries, more than its "
                        + capacity + "; the producer broke its protocol");
            }
            MemorySegment.copy(ring, entryOffset(head), entry, 0, ENTRY_BYTES);
            VarHandle.loadLoadFence(); // the entry is read before the owner is checked
            checkOwner();
            head++;
            LONG.setRelease(ring, CURSOR, (long) owner << 32 | (head & 0xFFFF_FFFFL));
            return entryFrame.clear();
        }

        /** Whether any entry not yet taken passes {@code test} (given each entry's frame); takes nothing. */
        public boolean anyUnread(Predicate<ByteBuffer> test) {
            long tail = (long) LONG.getAcquire(ring, TAIL);
            if (tail < head || tail - head > capacity) {
                return false;
            }
            for (long k = head; k < tail; k++) {
                MemorySegment.copy(ring, entryOffset(k), entry, 0, ENTRY_BYTES);
                if (test.test(entryFrame.clear())) {
                    return true;
                }
            }
            return false;
        }

        private void checkOwner() {
            int now = (int) INT.getVolatile(ring, OWNER);
            if (now != owner) {
                throw new RingTakenException("this consumer's descriptor ring now serves consumer " + now
                        + ": the producer detached this consumer");
            }
        }

        /** The doorbell's value now; read before looking for entries, pass it to {@link #park}. */
        public int doorbell() {
            return (int) INT.getVolatile(ring, DOORBELL);
        }

        /**
         * Sleeps until the doorbell differs from {@code seen}, at most {@code nanos}; returns at once if it
         * already differs. Spurious returns happen: the caller looks again.
         *
         * @return as {@link Futex#await}: 0 when woken, {@link Futex#EAGAIN} when the doorbell had already
         *         moved, {@link Futex#ETIMEDOUT} when no one rang within {@code nanos}
         */
        @SuppressWarnings("ReachabilityFenceUsage") // the fence keeps the ring mapped through the wait, no later
        public int park(Futex futex, int seen, long nanos) {
            INT.setVolatile(ring, PARKED, 1);
            try {
                int r = futex.await(doorbell, seen, nanos);
                Reference.reachabilityFence(ring);
                return r;
            } finally {
                INT.setRelease(ring, PARKED, 0);
            }
        }
    }

    /** The consumer's ring was given to another consumer: the producer detached this one. */
    public static final class RingTakenException extends RuntimeException {
        RingTakenException(String message) {
            super(message);
        }
    }
}
