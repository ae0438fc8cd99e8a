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

    /** Number of retained batches handed to the consumer before any new one. */
    public long retainedCount() {
        return Math.max(0, lastRetained - firstRetained + 1);
    }
}
