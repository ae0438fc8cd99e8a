package io.tensorsocket.arena;

import io.tensorsocket.SharedMemoryFullException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Makes sure a file's blocks exist before the file is mapped. A mapping of a sparse file on a full tmpfs
 * does not fail when it is made but when a page is first written, as a SIGBUS the JVM turns into an
 * {@link InternalError} ("a fault occurred in an unsafe memory access operation"). Allocating the blocks
 * first turns that into ENOSPC here, where it can be reported and cleaned up.
 *
 * <p>Uses {@code posix_fallocate(3)} through the foreign-function API; where the C library lacks it,
 * writes zeros through the file channel, which fails with the same error.
 */
public final class SpaceReservation {
    private static final int ENOSPC = 28;
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;

    private SpaceReservation() {}

    /** Bytes the file system holding {@code dir} (or its nearest existing ancestor) can still give this user. */
    public static long usableBytes(Path dir) throws IOException {
        Path p = dir.toAbsolutePath();
        while (p != null && !Files.exists(p)) {
            p = p.getParent();
        }
        if (p == null) {
            throw new IOException("no existing directory above " + dir);
        }
        return Files.getFileStore(p).getUsableSpace();
    }

    /**
     * Gives the existing, empty {@code file} {@code bytes} of allocated space.
     *
     * @throws SharedMemoryFullException if the file system has not that much free (checked first, then by
     *                                   the allocation itself, which also catches a race with another writer)
     */
    public static void reserve(Path file, long bytes) throws IOException {
        checkFree(file, bytes);
        fill(file, bytes);
    }

    /**
     * The check of {@link #reserve}, then allocates only the first 4 KiB page of every whole {@code stride} of
     * the file's first {@code bytes}: for a file whose strides are then made 2 MiB pages in place (which needs
     * one page present in each, and would otherwise allocate every 4 KiB page only to free it again).
     * {@link #fill} allocates what those do not cover.
     *
     * @throws SharedMemoryFullException as {@link #reserve}
     */
    static void reserveSparsely(Path file, long bytes, long stride) throws IOException {
        checkFree(file, bytes);
        allocate(file, 0, bytes, stride, ArenaLayout.PAGE);
    }

    /**
     * Allocates every block of the file's first {@code bytes} not yet allocated, without {@link #reserve}'s
     * check of free space (blocks already allocated count against it).
     *
     * @throws SharedMemoryFullException if the file system runs out of space
     */
    static void fill(Path file, long bytes) throws IOException {
        allocate(file, 0, bytes, bytes, bytes);
    }

    /**
     * Allocates bytes {@code from} to {@code to} of the file: every block, or with {@code sparsely} only the first
     * 4 KiB page of each whole {@code stride} (as {@link #reserveSparsely} does for the whole file).
     *
     * @throws SharedMemoryFullException if the file system runs out of space
     */
    static void allocate(Path file, long from, long to, boolean sparsely, long stride) throws IOException {
        if (sparsely) {
            allocate(file, from, to, stride, ArenaLayout.PAGE);
        } else {
            allocate(file, from, to, to - from, to - from);
        }
    }

    /**
     * Checks that the file system holding {@code file} has {@code bytes} free for it.
     *
     * @throws SharedMemoryFullException where it has not
     */
    static void checkFree(Path file, long bytes) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        long free = usableBytes(dir);
        if (bytes > free) {
            throw new SharedMemoryFullException(dir, bytes, free);
        }
    }

    /** Allocates {@code length} bytes at the start of every whole {@code stride} from {@code from} to {@code to}. */
    private static void allocate(Path file, long from, long to, long stride, long length) throws IOException {
        if (to <= from) {
            return;
        }
        int err = Libc.FALLOCATE != null && Libc.OPEN != null && Libc.CLOSE != null
                ? fallocate(file, from, to, stride, length)
                : writeZeros(file, from, to);
        Path dir = file.toAbsolutePath().getParent();
        if (err == ENOSPC) {
            throw new SharedMemoryFullException(dir, to - from, usableBytes(dir));
        }
        if (err != 0) {
            throw new IOException("could not reserve " + (to - from) + " bytes for " + file + " (errno " + err + ")");
        }
    }

    private static int fallocate(Path file, long from, long to, long stride, long length) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            int fd = (int) Libc.OPEN.invokeExact(
                    Libc.captureState(a), a.allocateFrom(file.toAbsolutePath().toString()), O_RDWR | O_CLOEXEC);
            if (fd < 0) {
                throw new IOException("could not open " + file + " to reserve its space");
            }
            try {
                for (long at = from; at + stride <= to; at += stride) {
                    // posix_fallocate returns the error number instead of setting errno.
                    int err = (int) Libc.FALLOCATE.invokeExact(fd, at, length);
                    if (err != 0) {
                        // A file system without fallocate support (EOPNOTSUPP / EINVAL): fall back to writing.
                        return err == 95 || err == 22 ? writeZeros(file, from, to) : err;
                    }
                }
                return 0;
            } finally {
                int ignored = (int) Libc.CLOSE.invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("posix_fallocate call failed", t);
        }
    }

    private static int writeZeros(Path file, long from, long to) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            for (long pos = from; pos < to; ) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), to - pos));
                pos += ch.write(zeros, pos);
            }
            return 0;
        } catch (IOException e) {
            if (String.valueOf(e.getMessage()).contains("No space left")) {
                return ENOSPC;
            }
            throw e;
        }
    }
}
