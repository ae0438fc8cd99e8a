package io.tensorsocket;

import java.nio.file.Path;
import java.util.Locale;

/**
 * The file system that holds a producer's arena (usually {@code /dev/shm}) has too little free space for it.
 * Thrown by {@link TensorProducer.Builder#build()} before anything is written, so nothing is left behind.
 * The message is one line that says how much is needed, how much is free, and how to get more.
 */
public final class SharedMemoryFullException extends TensorSocketException {
    private final Path directory;
    private final long bytesNeeded;
    private final long bytesFree;

    public SharedMemoryFullException(Path directory, long bytesNeeded, long bytesFree) {
        super(message(directory, bytesNeeded, bytesFree));
        this.directory = directory;
        this.bytesNeeded = bytesNeeded;
        this.bytesFree = bytesFree;
    }

    private static String message(Path dir, long needed, long free) {
        return "not enough shared memory in " + dir + ": the arena needs " + needed + " bytes (" + mib(needed)
                + " MiB) but only " + free + " bytes (" + mib(free)
                + " MiB) are free; use a smaller arena (--arena-mb or"
                + " --slots) or a smaller loader batch, give the container more shared memory (docker run --shm-size=1g,"
                + " or --ipc=host; in Kubernetes mount an emptyDir with medium: Memory and a sizeLimit at /dev/shm),"
                + " or point TENSORSOCKET_BASE at a file system with more room";
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / (double) (1 << 20));
    }

    /** The directory whose file system is full. */
    public Path directory() {
        return directory;
    }

    /** Bytes the arena needs. */
    public long bytesNeeded() {
        return bytesNeeded;
    }

    /** Bytes the file system had free when the arena was sized. */
    public long bytesFree() {
        return bytesFree;
    }
}
