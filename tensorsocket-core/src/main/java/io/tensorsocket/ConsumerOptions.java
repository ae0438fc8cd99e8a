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
 */
public record ConsumerOptions(int batchSize, boolean dropLast, Duration connectTimeout, Duration batchTimeout) {
    public ConsumerOptions {
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        Objects.requireNonNull(batchTimeout, "batchTimeout");
        if (connectTimeout.isNegative() || connectTimeout.isZero() || batchTimeout.isNegative() || batchTimeout.isZero()) {
            throw new IllegalArgumentException("timeouts must be positive");
        }
    }

    /** Batch size {@code batchSize}, last batch kept, 10 s to connect, 120 s per batch. */
    public static ConsumerOptions batchSize(int batchSize) {
        return new ConsumerOptions(batchSize, false, Duration.ofSeconds(10), Duration.ofSeconds(120));
    }

    public ConsumerOptions withDropLast(boolean dropLast) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, batchTimeout);
    }

    public ConsumerOptions withConnectTimeout(Duration timeout) {
        return new ConsumerOptions(batchSize, dropLast, timeout, batchTimeout);
    }

    public ConsumerOptions withBatchTimeout(Duration timeout) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, timeout);
    }
}
