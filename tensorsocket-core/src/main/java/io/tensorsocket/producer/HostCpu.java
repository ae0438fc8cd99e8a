package io.tensorsocket.producer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.List;

/**
 * How many cores this host leaves idle, as a lane would spend them: over the last {@link #SPAN_NANOS}, the host's idle
 * share of its cores ({@code /proc/stat}), and where the producer runs in a cgroup with a CPU quota (a container's
 * {@code --cpus}), no more than the quota less what the cgroup used ({@code cpu.max}, {@code cpu.stat}). A reading is
 * taken when asked, at most every 250 ms; before two readings, or where the files cannot be read (not Linux), it says
 * {@link Double#NaN} (not known).
 *
 * <p>Not thread-safe: the producer's lock guards it.
 */
final class HostCpu {
    /** The time the idle cores are averaged over. */
    static final long SPAN_NANOS = 10_000_000_000L;

    private static final long EVERY_NANOS = 250_000_000L;

    private record Reading(long at, long idleTicks, long totalTicks, long cgroupMicros) {}

    private final Path stat;
    private final Path cgroup;
    private final int cores;
    private final ArrayDeque<Reading> readings = new ArrayDeque<>();

    /** This host's: {@code /proc/stat} and the cgroup v2 hierarchy at {@code /sys/fs/cgroup}. */
    static HostCpu ofThisHost() {
        return new HostCpu(
                Path.of("/proc/stat"),
                Path.of("/sys/fs/cgroup"),
                Runtime.getRuntime().availableProcessors());
    }

    /** Reads {@code stat} (as {@code /proc/stat}) and the cgroup files under {@code cgroup}, on {@code cores} cores. */
    HostCpu(Path stat, Path cgroup, int cores) {
        this.stat = stat;
        this.cgroup = cgroup;
        this.cores = cores;
    }

    /** The cores left idle over the readings of the last {@link #SPAN_NANOS} up to {@code now}, or NaN before two. */
    double idleCores(long now) {
        Reading last = readings.peekLast();
        if (last == null || now - last.at >= EVERY_NANOS) {
            Reading r = read(now);
            if (r == null) {
                return Double.NaN;
            }
            readings.addLast(r);
            while (readings.size() > 2 && now - readings.peekFirst().at > SPAN_NANOS) {
                readings.removeFirst();
            }
        }
        Reading first = readings.peekFirst();
        Reading newest = readings.peekLast();
        if (readings.size() < 2 || newest.totalTicks == first.totalTicks) {
            return Double.NaN;
        }
        double idle = cores * (double) (newest.idleTicks - first.idleTicks) / (newest.totalTicks - first.totalTicks);
        double quota = quotaCores();
        if (quota > 0 && newest.cgroupMicros >= 0 && first.cgroupMicros >= 0) {
            double used = (newest.cgroupMicros - first.cgroupMicros) / ((newest.at - first.at) / 1e3);
            idle = Math.min(idle, Math.max(0, quota - used));
        }
        return idle;
    }

    private Reading read(long now) {
        try {
            for (String line : Files.readAllLines(stat)) {
                if (line.startsWith("cpu ")) {
                    String[] f = line.trim().split("\\s+");
                    long total = 0;
                    for (int i = 1; i < f.length && i <= 8; i++) { // user nice system idle iowait irq softirq steal
                        total += Long.parseLong(f[i]);
                    }
                    long idle = Long.parseLong(f[4]) + (f.length > 5 ? Long.parseLong(f[5]) : 0);
                    return new Reading(now, idle, total, cgroupMicros());
                }
            }
        } catch (IOException | RuntimeException e) {
            return null; // not Linux, or a format this does not know: not known
        }
        return null;
    }

    /** The cgroup's CPU time so far in microseconds ({@code cpu.stat}'s usage_usec), or -1. */
    private long cgroupMicros() {
        try {
            for (String line : Files.readAllLines(cgroup.resolve("cpu.stat"))) {
                if (line.startsWith("usage_usec ")) {
                    return Long.parseLong(line.substring("usage_usec ".length()).trim());
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    /** The cgroup's quota in cores ({@code cpu.max}: "quota period"), or 0 where it has none ("max") or none is read. */
    private double quotaCores() {
        try {
            List<String> lines = Files.readAllLines(cgroup.resolve("cpu.max"));
            String[] f =
                    lines.isEmpty() ? new String[0] : lines.getFirst().trim().split("\\s+");
            if (f.length == 2 && !f[0].equals("max")) {
                return Double.parseDouble(f[0]) / Double.parseDouble(f[1]);
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }
}
