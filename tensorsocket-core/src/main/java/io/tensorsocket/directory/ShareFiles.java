package io.tensorsocket.directory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The two files a share keeps beside the producers' directories for producer {@code NAME}: {@code .NAME.share.lock},
 * whose lock ({@link StartLock}) lets one caller at a time start the producer, and {@code .NAME.share.log}, the
 * output of the producers started for it, which a failing start shows. A producer that ends cleanly removes both;
 * one that failed or was killed leaves them, so the next start can show what happened.
 */
public final class ShareFiles {
    private ShareFiles() {}

    /** {@code .NAME.share.lock} in the base directory. */
    public static Path lockFile(String name) {
        return lockFile(ProducerDirectory.baseDirectory(), name);
    }

    static Path lockFile(Path base, String name) {
        return base.resolve("." + name + ".share.lock");
    }

    /** {@code .NAME.share.log} in the base directory. */
    public static Path logFile(String name) {
        return logFile(ProducerDirectory.baseDirectory(), name);
    }

    static Path logFile(Path base, String name) {
        return base.resolve("." + name + ".share.log");
    }

    /**
     * Removes both files of share {@code name} unless they are in use: a caller holds the lock (it is starting the
     * next producer of the name) or a producer of the name runs. Call it once the producer has let go of its
     * directory's lock.
     */
    public static void removeUnused(String name) {
        removeUnused(ProducerDirectory.baseDirectory(), name);
    }

    static void removeUnused(Path base, String name) {
        Path lock = lockFile(base, name);
        try (StartLock held = StartLock.tryTake(lock)) {
            if (held != null && !ProducerDirectory.isLocked(base.resolve(name))) {
                Files.deleteIfExists(logFile(base, name));
                Files.deleteIfExists(lock);
            }
        } catch (IOException e) {
            // left behind, as after a producer that did not end cleanly; the next share reuses them
        }
    }
}
