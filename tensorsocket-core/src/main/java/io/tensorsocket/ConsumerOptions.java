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
 * @param client         who this consumer is, as the producer's {@code status} shows it; null: this
 *                       process's command (a Flight server sets the remote peer's address here)
 */
public record ConsumerOptions(int batchSize, boolean dropLast, Duration connectTimeout, Duration batchTimeout,
                              String client) {
    /** Options without a client label (the producer shows this process's command). */
    public ConsumerOptions(int batchSize, boolean dropLast, Duration connectTimeout, Duration batchTimeout) {
        this(batchSize, dropLast, connectTimeout, batchTimeout, null);
    }

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
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, batchTimeout, client);
    }

    public ConsumerOptions withConnectTimeout(Duration timeout) {
        return new ConsumerOptions(batchSize, dropLast, timeout, batchTimeout, client);
    }

    public ConsumerOptions withBatchTimeout(Duration timeout) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, timeout, client);
    }

    /** Labels this consumer in the producer's status (e.g. the host it serves); null for this process's command. */
    public ConsumerOptions withClient(String label) {
        return new ConsumerOptions(batchSize, dropLast, connectTimeout, batchTimeout, label);
    }
}
