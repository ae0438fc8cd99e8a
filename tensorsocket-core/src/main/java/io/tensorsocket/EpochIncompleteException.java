package io.tensorsocket;

/**
 * The stream ended before this consumer's epoch was whole: it joined a finite stream mid-epoch and its producer could
 * not complete its last epoch (a source that fixes its own order cannot load the missing samples again by index).
 * Thrown where the epoch's batches run out, never instead of them: every sample that arrived was handed out first.
 */
public final class EpochIncompleteException extends TensorSocketException {
    private final long epoch;
    private final long missing;

    public EpochIncompleteException(String message, long epoch, long missing) {
        super(message);
        this.epoch = epoch;
        this.missing = missing;
    }

    /** The consumer's epoch that ended short. */
    public long epoch() {
        return epoch;
    }

    /** How many samples of that epoch (of this consumer's share of it) never came. */
    public long missing() {
        return missing;
    }
}
