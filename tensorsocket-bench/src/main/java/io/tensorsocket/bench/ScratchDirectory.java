package io.tensorsocket.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * A directory in /dev/shm for what one benchmark run creates (a producer's arena can hold hundreds of MB of shared
 * memory): removed with all it holds on {@link #close()}, or by a shutdown hook if a signal (SIGTERM, Ctrl-C) stops
 * the JVM before that.
 */
public final class ScratchDirectory implements AutoCloseable {
    private static final Set<Path> OPEN = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime()
                .addShutdownHook(Thread.ofPlatform()
                        .name("tensorsocket-bench-cleanup")
                        .unstarted(() -> OPEN.forEach(ScratchDirectory::delete)));
    }

    private final Path path;

    private ScratchDirectory(Path path) {
        this.path = path;
    }

    /** Creates {@code /dev/shm/<prefix><random>}. */
    public static ScratchDirectory create(String prefix) throws IOException {
        ScratchDirectory d = new ScratchDirectory(Files.createTempDirectory(Path.of("/dev/shm"), prefix));
        OPEN.add(d.path);
        return d;
    }

    public Path path() {
        return path;
    }

    /** {@code path().resolve(name)}. */
    public Path resolve(String name) {
        return path.resolve(name);
    }

    @Override
    public void close() {
        delete(path);
        OPEN.remove(path);
    }

    private static void delete(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // already gone
        }
    }
}
