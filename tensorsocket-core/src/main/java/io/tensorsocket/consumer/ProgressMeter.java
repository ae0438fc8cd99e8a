package io.tensorsocket.consumer;

/**
 * Where a consumer's time goes: inside its iterator (waiting for data) or outside it (the caller working),
 * and how many samples it handed out, for its own accessors and for the PROGRESS report the producer's
 * status shows. Used under the consumer's lock.
 */
public final class ProgressMeter {
    private static final long REPORT_EVERY_NANOS = 1_000_000_000L;

    private long waitNanos;
    private long workNanos;
    private long outsideSince;
    private long samples;
    private long lastReportNanos;

    /** An iterator call begins: the time since the previous one ended was work. Returns the call's start. */
    public long enter() {
        long now = System.nanoTime();
        if (outsideSince != 0) {
            workNanos += now - outsideSince;
            outsideSince = 0;
        }
        return now;
    }

    /** The iterator call that began at {@code entered} ends: its time was waiting. */
    public void leave(long entered) {
        long now = System.nanoTime();
        waitNanos += now - entered;
        outsideSince = now;
    }

    /** Samples handed to the caller. */
    public void handed(int n) {
        samples += n;
    }

    /**
     * Whether a report is due at {@code now} (about once a second, once samples were handed out); a true
     * answer counts as the report made. Asked on entering an iterator call, before any wait, so that its
     * write never delays a batch being handed out.
     */
    public boolean reportDue(long now) {
        if (samples == 0 || now - lastReportNanos < REPORT_EVERY_NANOS) {
            return false;
        }
        lastReportNanos = now;
        return true;
    }

    public long waitNanos() {
        return waitNanos;
    }

    public long workNanos() {
        return workNanos;
    }

    public long samples() {
        return samples;
    }
}
