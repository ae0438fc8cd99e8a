package io.tensorsocket;

/** How a consumer's first epoch lines up with the producer's stream. */
public enum StartMode {
    /** The consumer started at the first sample of a producer epoch, so its epochs are the producer's. */
    EPOCH_START,
    /**
     * The consumer joined after the start of the producer's current epoch had left the rubber-band window, and the
     * source fixes its own order (a plain iterable): each of its epochs is one dataset's worth of samples counted
     * from where it joined, straddling two producer epochs, so it may hold some samples twice and miss others.
     */
    ROLLING,
    /**
     * The consumer joined mid-epoch, and the producer chooses the sample order (a source that loads samples by
     * index, {@link IndexedSource}): each of its epochs is one dataset's worth of samples counted from where it
     * joined, and exactly one pass over the data set (see {@code io.tensorsocket.stream.ChunkedShuffle}).
     */
    EXACT;

    /** The name the CLI prints: {@code epoch_start}, {@code rolling} or {@code exact}. */
    public String label() {
        return switch (this) {
            case EPOCH_START -> "epoch_start";
            case ROLLING -> "rolling";
            case EXACT -> "exact";
        };
    }

    /** Whether every epoch of a consumer that started this way is one pass over the data set. */
    public boolean exactEpochs() {
        return this != ROLLING;
    }
}
