package io.tensorsocket.cli;

import io.tensorsocket.directory.ProducerDirectory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Producer directories whose producer is gone: no process holds the lock, yet the files (the arena above
 * all, often gigabytes of shared memory) are still there. A producer is running exactly when its lock is
 * held; a directory alone says nothing.
 */
final class StaleProducers {
    private StaleProducers() {}

    /** One stale directory, with the pid its producer wrote into the lock file (empty if none) and its bytes. */
    record Stale(Path dir, String pid, long bytes) {
        String name() {
            return dir.getFileName().toString();
        }
    }

    /** Whether {@code d} holds any file a producer leaves behind. */
    static boolean isProducerDirectory(Path d) {
        return Files.exists(d.resolve(ProducerDirectory.LOCK_FILE))
                || Files.exists(d.resolve(ProducerDirectory.SOCKET_FILE))
                || Files.exists(d.resolve(ProducerDirectory.ARENA_FILE));
    }

    /** The stale producer directories under the base directory, by name. */
    static List<Stale> find() {
        Path base = ProducerDirectory.baseDirectory();
        List<Stale> stale = new ArrayList<>();
        if (!Files.isDirectory(base)) {
            return stale;
        }
        try (Stream<Path> s = Files.list(base)) {
            for (Path d : s.filter(Files::isDirectory).sorted().toList()) {
                if (isProducerDirectory(d) && !ProducerDirectory.isLocked(d)) {
                    stale.add(new Stale(d, pid(d), bytes(d)));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + base + ": " + e.getMessage(), e);
        }
        return stale;
    }

    static String pid(Path d) {
        try {
            return Files.readString(d.resolve(ProducerDirectory.LOCK_FILE), StandardCharsets.US_ASCII)
                    .trim();
        } catch (IOException e) {
            return "";
        }
    }

    private static long bytes(Path d) {
        try (Stream<Path> s = Files.list(d)) {
            return s.filter(Files::isRegularFile)
                    .mapToLong(f -> {
                        try {
                            return Files.size(f);
                        } catch (IOException e) {
                            return 0; // removed meanwhile
                        }
                    })
                    .sum();
        } catch (IOException e) {
            return 0;
        }
    }

    /** {@code bytes} for people: 3.1 GB, 12.0 MB, 512 B. */
    static String size(long bytes) {
        String[] units = {"B", "KB", "MB", "GB", "TB"};
        double v = bytes;
        int u = 0;
        while (v >= 1000 && u < units.length - 1) {
            v /= 1000;
            u++;
        }
        return u == 0 ? bytes + " B" : String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}
