package io.tensorsocket.cli;

import io.tensorsocket.directory.ProducerDirectory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Producers that run but do not serve yet: an external producer waiting for its feeder to declare the
 * batches. Its lock is held and its feeder socket is open, but it has no control socket to ask, so
 * {@code list} and {@code status} read what they show from the directory: the pid in the lock file and
 * when the wait began (when the feeder socket was made).
 */
final class FeederWaits {
    private FeederWaits() {}

    /** One producer waiting for its feeder since {@code since}. */
    record Waiting(Path dir, String pid, Instant since) {
        String name() {
            return dir.getFileName().toString();
        }

        /** "waiting for a feeder since 10:16:15 (42 s)". */
        String state() {
            long s = Math.max(0, Duration.between(since, Instant.now()).toSeconds());
            return "waiting for a feeder since "
                    + LocalTime.ofInstant(since, ZoneId.systemDefault()).format(DateTimeFormatter.ofPattern("HH:mm:ss"))
                    + " (" + s + " s)";
        }
    }

    /** The producer in {@code dir}, if it waits for its feeder. */
    static Optional<Waiting> of(Path dir) {
        Path feeder = dir.resolve(ProducerDirectory.FEEDER_SOCKET_FILE);
        if (Files.exists(dir.resolve(ProducerDirectory.SOCKET_FILE))
                || !Files.exists(feeder)
                || !ProducerDirectory.isLocked(dir)) {
            return Optional.empty();
        }
        try {
            return Optional.of(new Waiting(
                    dir,
                    StaleProducers.pid(dir),
                    Files.getLastModifiedTime(feeder).toInstant()));
        } catch (IOException e) {
            return Optional.empty(); // it stopped waiting meanwhile
        }
    }

    /** Every producer under the base directory that waits for its feeder, by name. */
    static List<Waiting> find() {
        Path base = ProducerDirectory.baseDirectory();
        List<Waiting> found = new ArrayList<>();
        if (!Files.isDirectory(base)) {
            return found;
        }
        try (Stream<Path> s = Files.list(base)) {
            for (Path d : s.filter(Files::isDirectory).sorted().toList()) {
                of(d).ifPresent(found::add);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + base + ": " + e.getMessage(), e);
        }
        return found;
    }
}
