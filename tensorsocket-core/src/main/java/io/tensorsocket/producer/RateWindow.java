package io.tensorsocket.producer;

/** Samples per second over roughly the last few seconds, from cumulative counts sampled as they change. */
final class RateWindow {
    private static final int POINTS = 32;
    private static final long SPACING = 100_000_000L;
    private final long[] at = new long[POINTS];
    private final long[] count = new long[POINTS];
    private int size;
    private int head;

    void record(long nanos, long cumulative) {
        int last = (head + size - 1) % POINTS;
        if (size > 1 && nanos - at[(head + size - 2) % POINTS] < SPACING) {
            at[last] = nanos; // too close to the one before: move the newest point instead of adding one
            count[last] = cumulative;
            return;
        }
        if (size == POINTS) {
            head = (head + 1) % POINTS;
            size--;
        }
        int i = (head + size) % POINTS;
        at[i] = nanos;
        count[i] = cumulative;
        size++;
    }

    double perSecond(long now) {
        if (size < 2) {
            return 0;
        }
        long lastAt = at[(head + size - 1) % POINTS];
        long dt = Math.max(now, lastAt) - at[head];
        long dc = count[(head + size - 1) % POINTS] - count[head];
        return dt > 0 ? dc / (dt / 1e9) : 0;
    }
}
