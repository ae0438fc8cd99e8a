package io.tensorsocket;

import java.time.Duration;
import java.util.Objects;

/**
 * What a {@link TensorConsumer} asks for and how long it waits.
 *
 * @param batchSize      samples per batch this consumer receives, whatever the producer's batch size
 * @param dropLast       drop each epoch's last batch if it is smaller than {@code batchSize}
 * @param connectTimeout how long to wait for the producer's WELCOME
 * @param batchTimeout   how long to wait for the next batch before giving up; keep it above the
 *                       producer's stall timeout, since a stalled peer can hold everyone up that long
 * @param liveness       how long a waiting consumer accepts hearing nothing at all from the producer (a
 *                       live producer sends a heartbeat every second while it has nothing else to send)
 *                       before it reports the producer as not responding
 * @param startPolicy    what to do when arriving too late to start at the current epoch's start
 */
public record ConsumerOptions(int batchSize, boolean dropLast, Duration connectTimeout, Duration batchTimeout,
                              Duration liveness, StartPolicy startPolicy) {
    /** The default {@link #liveness()}: ten missed heartbeats. */
    public static final Duration DEFAULT_LIVENESS = Duration.ofSeconds(10);

    public ConsumerOptions {
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        Objects.requireNonNull(batchTimeout, "batchTimeout");
        Objects.requireNonNull(liveness, "liveness");
        Objects.requireNonNull(startPolicy, "startPolicy");
        if (connectTimeout.isNegative() || connectTimeout.isZero() || batchTimeout.isNegative() || batchTimeout.isZero()) {
            throw new IllegalArgumentException("timeouts must be positive");
        }
        if (liveness.compareTo(Duration.ofSeconds(2)) < 0) {
            throw new IllegalArgumentException("liveness of " + liveness.toMillis() + " ms is too short: the producer"
                    + " sends a heartbeat once a second, so allow at least 2 s");
        }
    }

    /** Batch size {@code batchSize}, last batch kept, 10 s to connect, 120 s per batch, 10 s liveness, join now. */
    public static ConsumerOptions batchSize(int batchSize) {
        return new ConsumerOptions(batchSize, false, Duration.ofSeconds(10), Duration.ofSeconds(120), DEFAULT_LIVENESS,
                StartPolicy.JOIN_NOW);
    }

    public ConsumerOptions withDropLast(boolean dropLast) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, batchTimeout, liveness, startPolicy);
    }

    public ConsumerOptions withConnectTimeout(Duration timeout) {
        return new ConsumerOptions(batchSize, dropLast, timeout, batchTimeout, liveness, startPolicy);
    }

    public ConsumerOptions withBatchTimeout(Duration timeout) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, timeout, liveness, startPolicy);
    }

    /** How long a waiting consumer hears nothing from the producer before it reports it as not responding. */
    public ConsumerOptions withLiveness(Duration liveness) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, batchTimeout, liveness, startPolicy);
    }

    /** What to do when arriving after the current epoch's start has left the rubber band. */
    public ConsumerOptions withStartPolicy(StartPolicy policy) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, batchTimeout, liveness, policy);
    }
}
