package io.tensorsocket.producer;

import io.tensorsocket.BatchSource;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Everything a producer is built from, as {@link io.tensorsocket.TensorProducer.Builder} checked it: the
 * assembly ({@link ProducerAssembly}) and the engine ({@link ProducerEngine}) read this record and nothing of
 * the builder. Each component means what the builder method of the same name documents.
 *
 * @param name         the producer's name (for an explicit directory: the directory's file name)
 * @param directory    where its socket, arena and rings live
 * @param arenaBytes   the arena's size, or 0 to size it by {@code slots}
 * @param slots        the arena's slots, or 0 for the default
 * @param idleTimeout  the idle timeout set, or null for the default ({@link #effectiveIdleTimeout})
 * @param shareKey     what {@code connectOrServe} compares, or null
 * @param accessGroup  the group that may connect too, or null for this user only
 */
public record ProducerSpec(
        String name,
        Path directory,
        BatchSource source,
        long arenaBytes,
        int slots,
        int rubberBand,
        int claimsAhead,
        int rings,
        long epochs,
        Duration stallTimeout,
        Duration idleTimeout,
        Duration startGrace,
        Duration jobTimeout,
        String shareKey,
        Duration helloTimeout,
        Duration drainTimeout,
        int minConsumers,
        String accessGroup) {

    public ProducerSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(source, "source");
    }

    /** The idle timeout in force: the one set, else 10 min, or none (null) for a producer that serves until stopped. */
    public Duration effectiveIdleTimeout(long servedEpochs) {
        if (idleTimeout != null) {
            return idleTimeout;
        }
        return servedEpochs == 0 ? null : Duration.ofMinutes(10);
    }
}
