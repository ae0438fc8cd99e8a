package io.tensorsocket;

/** How a consumer's first epoch lines up with the producer's stream. */
public enum StartMode {
    /** The consumer started at the first sample of a producer epoch, so its epochs are the producer's. */
    EPOCH_START,
    /**
     * The consumer joined after the start of the producer's current epoch had left the rubber-band window;
     * each of its epochs is one dataset's worth of samples counted from where it joined.
     */
    ROLLING;

    /** The name the CLI prints: {@code epoch_start} or {@code rolling}. */
    public String label() {
        return this == EPOCH_START ? "epoch_start" : "rolling";
    }
}
