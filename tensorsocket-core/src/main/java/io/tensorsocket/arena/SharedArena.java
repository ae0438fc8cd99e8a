package io.tensorsocket.arena;

import io.tensorsocket.ProtocolException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * One mapping of an arena file (see {@link ArenaLayout} for what is in it). The producer creates the
 * file and maps it read-write; consumers map it read-only. The mapping is made once per process and
 * pre-touched (the producer's by {@link ArenaPages}), because first access to a fresh mapping is what
 * costs here; slots are reused for the
 * producer's whole life. Every Java process maps it at a 2 MiB-aligned address, so that where the producer
 * backs it by 2 MiB pages (the default; {@code TENSORSOCKET_HUGE_PAGES=0} declines) they are mapped whole ({@link HugePageMapping}).
 */
public final class SharedArena implements AutoCloseable {
    private final ArenaLayout layout;
    private final Arena scope;
    private final MemorySegment segment;
    private final boolean hugePages;

    private SharedArena(ArenaLayout layout, Arena scope, MemorySegment segment, boolean hugePages) {
        this.layout = layout;
        this.scope = scope;
        this.segment = segment;
        this.hugePages = hugePages;
    }

    /**
     * Creates, sizes and maps the arena file of a producer and makes its pages ({@link ArenaPages}); the file is
     * 0600. Its free space is checked first, and each part's space is allocated before it is written ({@link
     * SpaceReservation}); on any failure the file is removed.
     *
     * @throws io.tensorsocket.SharedMemoryFullException if the file system cannot hold the arena
     */
    public static SharedArena create(Path file, ArenaLayout layout, long sessionId, long pid) throws IOException {
        return create(file, layout, sessionId, pid, HugePageMapping.requested());
    }

    /** As {@link #create(Path, ArenaLayout, long, long)}, with 2 MiB pages only if {@code hugePages}. */
    static SharedArena create(Path file, ArenaLayout layout, long sessionId, long pid, boolean hugePages)
            throws IOException {
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Arena scope = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long bytes = layout.fileBytes();
            boolean aligned = HugePageMapping.available();
            SpaceReservation.checkFree(file, bytes);
            try (RandomAccessFile sized = new RandomAccessFile(file.toFile(), "rw")) {
                sized.setLength(bytes); // a hole, whose pages ArenaPages makes (FileChannel.truncate never extends)
            }
            MemorySegment seg = map(ch, file, bytes, true, aligned, scope);
            boolean huge = ArenaPages.make(file, seg, hugePages && aligned);
            layout.writeHeader(seg, sessionId, pid);
            return new SharedArena(layout, scope, seg, huge);
        } catch (IOException | RuntimeException | Error e) {
            scope.close();
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /**
     * Maps an existing arena read-only, checks its header against what the producer announced and
     * pre-touches it.
     *
     * @throws ProtocolException if the file is not the arena the producer announced
     */
    public static SharedArena openReadOnly(Path file, ArenaLayout layout, long sessionId) throws IOException {
        return openReadOnly(file, layout, sessionId, HugePageMapping.available());
    }

    /** As {@link #openReadOnly(Path, ArenaLayout, long)}, mapped aligned for 2 MiB pages only if {@code aligned}. */
    static SharedArena openReadOnly(Path file, ArenaLayout layout, long sessionId, boolean aligned) throws IOException {
        Arena scope = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < layout.fileBytes()) {
                throw new ProtocolException("arena " + file + " is " + size + " bytes but the producer announced "
                        + layout.fileBytes() + "; is another producer using this directory?");
            }
            MemorySegment seg =
                    map(ch, file, layout.fileBytes(), false, aligned, scope).asReadOnly();
            String problem = layout.verifyHeader(seg, sessionId);
            if (problem != null) {
                throw new ProtocolException(
                        "arena " + file + " does not match the producer's announcement: " + problem);
            }
            pretouch(seg);
            return new SharedArena(layout, scope, seg, false);
        } catch (IOException | RuntimeException e) {
            scope.close();
            throw e;
        }
    }

    private static MemorySegment map(
            FileChannel ch, Path file, long bytes, boolean writable, boolean aligned, Arena scope) throws IOException {
        return aligned
                ? HugePageMapping.mapFile(file, bytes, writable, scope)
                : ch.map(writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY, 0, bytes, scope);
    }

    @SuppressWarnings("UnusedVariable") // a blackhole: written so the JIT keeps the reads, never read
    private static volatile long sink;

    private static void pretouch(MemorySegment seg) {
        long acc = 0;
        for (long off = 0; off < seg.byteSize(); off += ArenaLayout.PAGE) {
            acc += seg.get(ValueLayout.JAVA_BYTE, off);
        }
        sink = acc;
    }

    public ArenaLayout layout() {
        return layout;
    }

    /**
     * Whether this producer's arena is backed by 2 MiB pages (false for a consumer's mapping, which maps
     * whatever pages the producer's file has).
     */
    public boolean hugePages() {
        return hugePages;
    }

    /** The whole mapping. */
    public MemorySegment segment() {
        return segment;
    }

    /** Slot {@code slot}'s bytes. */
    public MemorySegment slot(int slot) {
        if (slot < 0 || slot >= layout.slotCount()) {
            throw new ProtocolException("slot " + slot + " outside the arena's " + layout.slotCount() + " slots");
        }
        return segment.asSlice(layout.slotOffset(slot), layout.slotBytes());
    }

    /** The region of tensor {@code tensor} in slot {@code slot}, for a full batch. */
    public MemorySegment region(int slot, int tensor) {
        return slot(slot).asSlice(layout.regionOffset(tensor), layout.regionBytes(tensor));
    }

    /** Unmaps. Views into the mapping must no longer be used (their batches are closed first). */
    @Override
    public void close() {
        scope.close();
    }
}
