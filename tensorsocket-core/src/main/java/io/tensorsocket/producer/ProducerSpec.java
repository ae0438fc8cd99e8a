package io.tensorsocket.producer;

import io.tensorsocket.BatchSource;
import io.tensorsocket.StartMode;
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
 * @param startGrace   the start grace set, or null for the default ({@link #effectiveStartGrace})
 * @param laneIdleCores the idle cores the host must have left for a lane to open
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
        int lanes,
        double laneIdleCores,
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

    /** The default start grace, for a finite stream or a source whose late joiners would roll into their first epoch. */
    public static final Duration DEFAULT_START_GRACE = Duration.ofSeconds(2);

    /**
     * The start grace in force: the one set, else {@link #DEFAULT_START_GRACE} for a stream of {@code epochs} epochs
     * (not 0: endless) or where a consumer joining mid-epoch would roll ({@code midEpoch} {@link StartMode#ROLLING}),
     * and none for an endless stream whose late joiners get exact epochs anyway. A consumer that joins a finite stream
     * late gets only the epochs left (each whole), and none once they were all published; the grace spares consumers
     * launched together that loss, as it spares them a rolling start.
     */
    public Duration effectiveStartGrace(StartMode midEpoch, long epochs) {
        if (startGrace != null) {
            return startGrace;
        }
        return midEpoch == StartMode.ROLLING || epochs > 0 ? DEFAULT_START_GRACE : Duration.ZERO;
    }
}
