package io.tensorsocket.directory;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The right to start the producer of a share: a lock on its lock file beside the producers' directories, one
 * holder at a time. The file is removed when the producer it started ends cleanly ({@link
 * ShareFiles#removeUnused}), so a lock is only good if the path still names the file that was locked once it is
 * held: a lock taken on a file removed meanwhile is let go and taken again on the file the path names now.
 */
public final class StartLock implements AutoCloseable {
    private final FileChannel channel;
    private final FileLock lock;

    private StartLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** Waits for the lock of {@code file} (creating it) until {@code deadline} ({@link System#nanoTime()}). */
    public static StartLock take(Path file, long deadline, Supplier<? extends RuntimeException> tooLong)
            throws IOException, InterruptedException {
        while (true) {
            StartLock l = attempt(file, true);
            if (l != null) {
                return l;
            }
            if (System.nanoTime() > deadline) {
                throw tooLong.get();
            }
            Thread.sleep(20);
        }
    }

    /** The lock of {@code file} if it exists and nobody (no process, no other holder in this JVM) holds it, else null. */
    public static StartLock tryTake(Path file) throws IOException {
        return attempt(file, false);
    }

    private static StartLock attempt(Path file, boolean create) throws IOException {
        while (true) {
            Object before = fileKey(file);
            if (before == null && !create) {
                return null;
            }
            FileChannel ch = create
                    ? FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)
                    : FileChannel.open(file, StandardOpenOption.WRITE);
            FileLock l;
            try {
                l = ch.tryLock();
            } catch (OverlappingFileLockException heldInThisJvm) {
                l = null;
            } catch (IOException | RuntimeException e) {
                ch.close();
                throw e;
            }
            if (l == null) {
                ch.close();
                return null;
            }
            if (before != null && Objects.equals(before, fileKey(file))) {
                return new StartLock(ch, l);
            }
            ch.close(); // created, or removed and made again, between looking and locking: look again
        }
    }

    private static Object fileKey(Path file) throws IOException {
        try {
            return Files.readAttributes(file, BasicFileAttributes.class).fileKey();
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    @Override
    public void close() throws IOException {
        try {
            lock.release();
        } finally {
            channel.close();
        }
    }
}
