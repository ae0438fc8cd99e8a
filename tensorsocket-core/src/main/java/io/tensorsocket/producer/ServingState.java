package io.tensorsocket.producer;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.protocol.Message;

/**
 * What the parts of a producer's core ({@link ProducerCore}, {@link Joining}) read and change of its serving state:
 * one object, guarded by the core's lock, instead of callbacks into each other.
 */
final class ServingState {
    /** Why the producer is closing, or null while it serves. */
    String closedReason;
    /** What the consumers attached when it closed were told (a loader's failure, say), or null. */
    Message.Error closedError;
    /** Whether the last epoch was served (or no more will be). */
    boolean streamEnded;
    /**
     * Whether a finite stream published all its epochs: what it still sends are the tails it owes ({@link Tails}), and
     * no consumer joins any more.
     */
    boolean epochsPublished;
    /** When the first consumer attached ({@link System#nanoTime()}), 0 before: the start grace counts from it. */
    long firstAttachNanos;

    long totalPublished;
    long totalSamples;

    /**
     * What a consumer that asks to join a closing producer {@code producer} is told: what those attached were told
     * when it closed (so that one who connected in the same moment as a loader failed hears the failure), else that
     * it is shutting down.
     */
    Message.Error refusalWhileClosing(String producer) {
        return closedError != null
                ? closedError
                : new Message.Error(
                        Message.ErrorCode.PRODUCER_CLOSED,
                        "producer '" + producer + "' is shutting down (" + closedReason + ")");
    }

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
