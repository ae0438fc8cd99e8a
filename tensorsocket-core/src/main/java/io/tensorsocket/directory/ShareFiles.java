package io.tensorsocket.directory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The two files a share keeps beside the producers' directories for producer {@code NAME}: {@code .NAME.share.lock},
 * whose lock ({@link StartLock}) lets one caller at a time start the producer, and {@code .NAME.share.log}, the
 * output of the producers started for it, which a failing start shows (and {@code .NAME.share.users}, the Ray sweeps
 * using it). A producer that ends cleanly removes them; one that failed to start or was killed leaves them, so the next
 * start can show what happened, until {@code tensorsocket clean} or that next start removes them.
 */
public final class ShareFiles {
    private static final Pattern FILE = Pattern.compile("^\\.(.+)\\.share\\.(lock|log|users)$");

    private ShareFiles() {}

    /**
     * The shares whose files are left in the base directory with no producer of the name running and no caller
     * starting one: what a failed start or a killed producer left.
     */
    public static List<String> leftBehind() {
        return leftBehind(ProducerDirectory.baseDirectory());
    }

    static List<String> leftBehind(Path base) {
        try (Stream<Path> files = Files.list(base)) {
            return files.map(f -> FILE.matcher(f.getFileName().toString()))
                    .filter(Matcher::matches)
                    .map(m -> m.group(1))
                    .distinct()
                    .sorted()
                    .filter(name -> unused(base, name))
                    .toList();
        } catch (IOException e) {
            return List.of(); // no base directory: nothing left
        }
    }

    private static boolean unused(Path base, String name) {
        if (!Files.exists(lockFile(base, name))) {
            return !ProducerDirectory.isLocked(base.resolve(name));
        }
        try (StartLock held = StartLock.tryTake(lockFile(base, name))) {
            return held != null && !ProducerDirectory.isLocked(base.resolve(name));
        } catch (IOException e) {
            return false;
        }
    }

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
            if ((held != null || !Files.exists(lock)) && !ProducerDirectory.isLocked(base.resolve(name))) {
                Files.deleteIfExists(logFile(base, name));
                Files.deleteIfExists(base.resolve("." + name + ".share.users"));
                Files.deleteIfExists(lock);
            }
        } catch (IOException e) {
            // left behind, as after a producer that did not end cleanly; the next share reuses them
        }
    }
}
