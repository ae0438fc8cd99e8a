package io.tensorsocket.producer;

import io.tensorsocket.ProducerStatus;

/**
 * What the parts of a producer's core ({@link ProducerCore}, {@link Joining}) read and change of its serving state:
 * one object, guarded by the core's lock, instead of callbacks into each other.
 */
final class ServingState {
    /** Why the producer is closing, or null while it serves. */
    String closedReason;
    /** Whether the last epoch was served (or no more will be). */
    boolean streamEnded;
    /** When the first consumer attached ({@link System#nanoTime()}), 0 before: the start grace counts from it. */
    long firstAttachNanos;

    long totalPublished;
    long totalSamples;

    /** What the producer is doing, with {@code consumers} attached, for its status. */
    ProducerStatus.State phase(int consumers, int minConsumers) {
        if (closedReason != null) {
            return ProducerStatus.State.CLOSING;
        }
        if (streamEnded) {
            return ProducerStatus.State.DRAINING;
        }
        return consumers < (totalPublished == 0 ? minConsumers : 1)
                ? ProducerStatus.State.WAITING_FOR_CONSUMERS
                : ProducerStatus.State.SERVING;
    }
}
