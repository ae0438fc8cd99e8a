package io.tensorsocket.producer;

import java.util.HashMap;
import java.util.Map;

/**
 * When a consumer has fallen behind far enough to be moved to a lane: the producer waited, within one window, at
 * least {@link #AFTER_NANOS} in all for slots it held while another consumer of the main stream had read everything
 * published (so waited for the producer, which waited for it). A consumer that merely reads in bursts costs the others less than that; one that
 * is slower every step crosses it within a second of the arena filling. A consumer that just caught up and rejoined the
 * main stream is left alone for a window: two consumers of one speed that trade places do not trade lanes too.
 *
 * <p>Pure bookkeeping, keyed by whatever identifies a consumer; not thread-safe (the producer's lock guards it).
 */
final class LaneRule<K> {
    /** The wait, within one window, that moves a consumer. */
    static final long AFTER_NANOS = 250_000_000L;
    /** The window's length: waits older than this are forgotten. */
    static final long WINDOW_NANOS = 10_000_000_000L;

    private final Map<K, Long> waited = new HashMap<>();
    private final Map<K, Long> quietUntil = new HashMap<>();
    private long windowStart = Long.MIN_VALUE;

    /**
     * The producer waited {@code nanos} (ending at {@code now}) for a slot {@code holder} held while another consumer
     * did not: whether {@code holder} has now crossed the line.
     */
    boolean waitedFor(K holder, long nanos, long now) {
        Long quiet = quietUntil.get(holder);
        if (quiet != null) {
            if (now - quiet < 0) {
                return false;
            }
            quietUntil.remove(holder);
        }
        if (windowStart == Long.MIN_VALUE || now - windowStart >= WINDOW_NANOS) {
            waited.clear();
            windowStart = now;
        }
        return waited.merge(holder, nanos, Long::sum) >= AFTER_NANOS;
    }

    /** Forgets {@code holder} (it moved, or left). */
    void forget(K holder) {
        waited.remove(holder);
        quietUntil.remove(holder);
    }

    /** {@code holder} caught up and rejoined the main stream at {@code now}: its waits count again a window later. */
    void rejoined(K holder, long now) {
        quiet(holder, now);
    }

    /** {@code holder} crossed the line at {@code now} but no lane could be made for it: it is judged again a window later. */
    void refused(K holder, long now) {
        quiet(holder, now);
    }

    private void quiet(K holder, long now) {
        waited.remove(holder);
        quietUntil.put(holder, now + WINDOW_NANOS);
    }
}
