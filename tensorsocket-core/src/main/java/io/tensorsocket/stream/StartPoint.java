package io.tensorsocket.stream;

import io.tensorsocket.StartMode;

/**
 * Where a joining consumer starts: its start mode, the producer epoch and sample of its first sample,
 * and the already published batches it is handed first (sequence numbers {@code firstRetained} to
 * {@code lastRetained}, none when {@code firstRetained > lastRetained}).
 */
public record StartPoint(StartMode mode, long epoch, long sample, long firstRetained, long lastRetained) {

    /** A start with no retained batches. */
    public static StartPoint of(StartMode mode, long epoch, long sample) {
        return new StartPoint(mode, epoch, sample, 0, -1);
    }

    /**
     * Whether a batch published after the join is sent to this consumer: only from its first sample on,
     * which matters for one that waits for the next epoch's start.
     */
    public boolean sends(BatchPosition batch, StreamGeometry geometry) {
        return geometry.position(batch.epoch(), batch.sampleStart()) >= geometry.position(epoch, sample);
    }

    /** Number of retained batches handed to the consumer before any new one. */
    public long retainedCount() {
        return Math.max(0, lastRetained - firstRetained + 1);
    }
}
