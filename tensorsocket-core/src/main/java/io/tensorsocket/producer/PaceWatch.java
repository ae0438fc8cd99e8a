package io.tensorsocket.producer;

import io.tensorsocket.ProducerStatus;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who sets the pace of a producer with several consumers: the one whose unreleased batches it waits for, so that
 * the others read at that one's speed rather than their own. Over windows of {@link #WINDOW}, each consumer's share
 * is the time the producer waited for a slot it still held, while another consumer was attached, over the window's
 * length. From {@link ProducerStatus.Consumer#SETS_PACE_SHARE} on it sets the pace: said once per consumer at INFO
 * (who, how long, what it costs the others), and marked in status through its share of the last window.
 *
 * Sessions are keyed by identity (ConsumerSession keeps Object's equality).
 *
 * <p>Not thread-safe: the producer's lock guards it, as it guards the waits it is told of.
 */
final class PaceWatch {
    private static final Logger log = LoggerFactory.getLogger(PaceWatch.class);

    /** The length of a pace window. */
    static final Duration WINDOW = Duration.ofSeconds(10);

    private final String producer;
    /** What the producer's arena holds: said with the remedy, a larger one. */
    private final int slotCount;

    private final long slotBytes;
    private final long windowNanos;
    private long windowStart = -1;
    private final Map<ConsumerSession, Long> waited = new HashMap<>();
    private final Map<ConsumerSession, Double> shares = new HashMap<>();
    private final Set<ConsumerSession> told = new HashSet<>();

    /** For producer {@code producer}, whose arena holds {@code slotCount} slots of {@code slotBytes}. */
    PaceWatch(String producer, int slotCount, long slotBytes) {
        this.producer = producer;
        this.slotCount = slotCount;
        this.slotBytes = slotBytes;
        this.windowNanos = WINDOW.toNanos();
    }

    /**
     * Whether waits count with {@code attached} consumers on the main stream (those in lanes read at their own pace): a
     * consumer alone there holds nobody back.
     */
    boolean watches(int attached) {
        return attached >= 2;
    }

    /** The producer waited {@code nanos} for a slot that {@code holders} held, with {@code attached} consumers. */
    void waited(List<ConsumerSession> holders, long nanos, int attached) {
        if (!watches(attached)) {
            return;
        }
        for (ConsumerSession h : holders) {
            waited.merge(h, nanos, Long::sum);
        }
    }

    /** Closes the window if it has run its length by {@code now}, saying once of each consumer that set the pace. */
    void tick(long now, int attached) {
        if (windowStart < 0) {
            windowStart = now;
            return;
        }
        long length = now - windowStart;
        if (length < windowNanos) {
            return;
        }
        shares.clear();
        waited.forEach((s, nanos) -> shares.put(s, Math.min(1.0, (double) nanos / length)));
        waited.clear();
        windowStart = now;
        shares.forEach((s, share) -> {
            if (share >= ProducerStatus.Consumer.SETS_PACE_SHARE && told.add(s)) {
                log.info(
                        "producer '{}' waited {} s of the last {} s ({}%) for {} to release its batches: it sets the"
                                + " pace, and {} at its speed; without it they could"
                                + " read up to {}x as fast. It keeps releasing, so it is not evicted; `tensorsocket"
                                + " status {}` marks it while it sets the pace. A larger arena lets the others read"
                                + " ahead of it: this one holds {} slots of {} KiB ({} MiB), and each slot more lets them lead"
                                + " by one more batch (serve --slots or --arena-mb; slots= or arena_mb= in Python)",
                        producer,
                        String.format(Locale.ROOT, "%.1f", share * length / 1e9),
                        String.format(Locale.ROOT, "%.1f", length / 1e9),
                        Math.round(share * 100),
                        s.describe(),
                        attached - 1 == 1
                                ? "the other consumer of the main stream reads"
                                : "the other " + (attached - 1) + " consumers of the main stream read",
                        String.format(Locale.ROOT, "%.1f", 1 / Math.max(0.01, 1 - share)),
                        producer,
                        slotCount,
                        slotBytes >> 10,
                        ArenaSizing.mib(slotCount * slotBytes));
            }
        });
    }

    /** {@code s}'s share of the last window (0 before one closed, or where the producer never waited for it). */
    double share(ConsumerSession s) {
        return shares.getOrDefault(s, 0.0);
    }

    /** Forgets a consumer that left. */
    void left(ConsumerSession s) {
        waited.remove(s);
        shares.remove(s);
        told.remove(s);
    }
}
