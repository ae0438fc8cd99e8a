package io.tensorsocket.cli;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;

/**
 * When a benchmark's warm-up may end: once a minimum has passed and the JIT has gone quiet, that is, it compiled for
 * less than {@value #QUIET_COMPILE_MS} ms in each of the last {@value #QUIET_WINDOWS} seconds; at the latest after a
 * maximum. On two cores the C2 compiler threads take most of a core for many seconds after a small-batch stream
 * starts, and a measurement that overlaps them counts their CPU and loses their core. Start it once the work to
 * measure runs: before that the JIT may be quiet for want of work.
 *
 * <p>Ask {@link #over(long)} at least once per second; it decides at the end of each one-second window.
 */
final class WarmUp {
    static final long QUIET_COMPILE_MS = 20;
    static final int QUIET_WINDOWS = 2;
    private static final long WINDOW_NANOS = 1_000_000_000L;
    private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

    private final long start;
    private final long minEnd;
    private final long maxEnd;
    private long windowStart;
    private long compiledAtWindowStart;
    private int quietWindows;
    private long ended;

    WarmUp(Duration min, Duration max) {
        this.start = System.nanoTime();
        this.minEnd = start + min.toNanos();
        this.maxEnd = start + max.toNanos();
        this.windowStart = start;
        this.compiledAtWindowStart = compiledMs();
    }

    /** Whether the warm-up is over at {@code now} ({@link System#nanoTime()}); once over, it stays over. */
    boolean over(long now) {
        if (ended != 0) {
            return true;
        }
        if (now - windowStart >= WINDOW_NANOS) {
            long compiled = compiledMs();
            quietWindows = compiled - compiledAtWindowStart < QUIET_COMPILE_MS ? quietWindows + 1 : 0;
            windowStart = now;
            compiledAtWindowStart = compiled;
        }
        if (now >= maxEnd || (quietWindows >= QUIET_WINDOWS && now >= minEnd)) {
            ended = now;
        }
        return ended != 0;
    }

    /** How long the warm-up lasted, or has lasted so far. */
    double seconds() {
        return ((ended != 0 ? ended : System.nanoTime()) - start) / 1e9;
    }

    private static long compiledMs() {
        return JIT != null && JIT.isCompilationTimeMonitoringSupported() ? JIT.getTotalCompilationTime() : 0;
    }
}
