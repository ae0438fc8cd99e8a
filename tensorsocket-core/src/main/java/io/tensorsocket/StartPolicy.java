package io.tensorsocket;

/**
 * What a consumer that arrives in the middle of a producer epoch asks for (sent in its HELLO; the
 * producer's join rule, {@code io.tensorsocket.stream.JoinRule}, decides). Either way, a consumer that
 * arrives while the current epoch's first batch is still in the rubber band starts at that epoch's start.
 */
public enum StartPolicy {
    /** Start at once: at the current epoch's start if the rubber band still holds it, else mid-epoch (exact or rolling). */
    JOIN_NOW,
    /**
     * Never roll: if the current epoch's start has left the rubber band, wait for the next epoch and start
     * there, so every epoch this consumer sees is a whole producer epoch (the reference implementation's
     * behaviour). It receives nothing until then.
     */
    NEXT_EPOCH_START;

    /** The name the CLI prints: {@code join_now} or {@code next_epoch_start}. */
    public String label() {
        return this == JOIN_NOW ? "join_now" : "next_epoch_start";
    }
}
