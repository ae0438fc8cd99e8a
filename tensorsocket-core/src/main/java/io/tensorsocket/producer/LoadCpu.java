package io.tensorsocket.producer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;

/**
 * What loading one sample costs the source in CPU: the CPU time of the processes that load (the producer's own for a
 * source that loads in it; an external feeder and its loader's workers) over the samples the main stream published,
 * across the readings of the last {@link #SPAN_NANOS}. A lane loads again every sample its consumer reads, so at that
 * consumer's own pace it spends pace x this many cores, which {@link Lanes} weighs against the idle ones ({@link
 * HostCpu}). With a decoded-sample cache the figure falls once the cache holds the data set: a lane then costs little.
 *
 * <p>A reading is taken when asked, at most every 250 ms: {@code /proc/<pid>/stat} of the loading process (its own
 * time and that of its children it reaped) and of every live descendant. Before two readings over samples, or where
 * the files cannot be read (not Linux), it says {@link Double#NaN}. Not thread-safe: the producer's lock guards it.
 */
final class LoadCpu {
    /** The time the cost is averaged over. */
    static final long SPAN_NANOS = 10_000_000_000L;

    private static final long EVERY_NANOS = 250_000_000L;
    /** Clock ticks per second of {@code /proc}'s times: 100 on every Linux this runs on (USER_HZ). */
    private static final long TICKS_PER_SECOND = 100;

    private record Reading(long at, long cpuTicks, long samples) {}

    private final Path proc;
    private final long pid;
    private final ArrayDeque<Reading> readings = new ArrayDeque<>();

    /** The loading process {@code pid} and its descendants, read under {@code proc} (as {@code /proc}). */
    LoadCpu(Path proc, long pid) {
        this.proc = proc;
        this.pid = pid;
    }

    /** For the process {@code pid} of this host. */
    static LoadCpu of(long pid) {
        return new LoadCpu(Path.of("/proc"), pid);
    }

    /**
     * CPU seconds per sample over the readings of the last {@link #SPAN_NANOS} up to {@code now}, the main stream having
     * published {@code samples} by then; NaN before two readings that published samples.
     */
    double secondsPerSample(long now, long samples) {
        Reading last = readings.peekLast();
        if (last == null || now - last.at >= EVERY_NANOS) {
            long ticks = treeTicks(pid, 0);
            if (ticks < 0) {
                return Double.NaN;
            }
            readings.addLast(new Reading(now, ticks, samples));
            while (readings.size() > 2 && now - readings.peekFirst().at > SPAN_NANOS) {
                readings.removeFirst();
            }
        }
        Reading first = readings.peekFirst();
        Reading newest = readings.peekLast();
        long published = newest.samples - first.samples;
        if (published <= 0) {
            return Double.NaN;
        }
        return (double) Math.max(0, newest.cpuTicks - first.cpuTicks) / TICKS_PER_SECOND / published;
    }

    /**
     * The cores loading at {@code pace} samples/s would spend ({@link #secondsPerSample} at {@code now}, the main stream
     * having published {@code samples}); 0 where the cost or the pace is not known.
     */
    double coresAt(double pace, long now, long samples) {
        double perSample = secondsPerSample(now, samples);
        return Double.isNaN(perSample) || !(pace > 0) ? 0 : pace * perSample;
    }

    /**
     * The CPU ticks of process {@code p} (user and system, its own and its reaped children's) and of its live
     * descendants; -1 where its {@code stat} cannot be read.
     */
    private long treeTicks(long p, int depth) {
        long own = ticks(p);
        if (own < 0 || depth > 4) {
            return own;
        }
        long sum = own;
        try (var tasks = Files.newDirectoryStream(proc.resolve(Long.toString(p)).resolve("task"))) {
            for (Path task : tasks) {
                for (String child :
                        Files.readString(task.resolve("children")).trim().split("\\s+")) {
                    if (!child.isEmpty()) {
                        sum += Math.max(0, treeTicks(Long.parseLong(child), depth + 1));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // a process or thread that ended meanwhile: its time is in its parent's reaped children's once reaped
        }
        return sum;
    }

    /** utime + stime + cutime + cstime of {@code p} (fields 14 to 17 of its stat), or -1. */
    private long ticks(long p) {
        try {
            String stat = Files.readString(proc.resolve(Long.toString(p)).resolve("stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
            // after the command: f[0] is field 3 (state), so field n is f[n - 3]
            return Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
