package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What loading a sample costs: the loading process's CPU and its descendants' over the samples published. */
class LoadCpuTest {
    private static final long S = 1_000_000_000L;

    @TempDir
    Path proc;

    /** Process {@code pid} with these CPU ticks (utime, stime, cutime, cstime) and these children. */
    private void process(long pid, long utime, long stime, long cutime, long cstime, long... children)
            throws IOException {
        Path task = Files.createDirectories(proc.resolve(pid + "/task/" + pid));
        Files.writeString(
                proc.resolve(pid + "/stat"),
                pid + " (python3 -m x) S 1 " + pid + " " + pid + " 0 -1 4194304 100 0 0 0 " + utime + " " + stime + " "
                        + cutime + " " + cstime + " 20 0 3 0 100 1000 10\n");
        StringBuilder kids = new StringBuilder();
        for (long c : children) {
            kids.append(c).append(' ');
        }
        Files.writeString(task.resolve("children"), kids.toString());
    }

    @Test
    void theLoadersTreesCpuOverTheSamplesPublished() throws IOException {
        LoadCpu cpu = new LoadCpu(proc, 100);
        process(100, 10, 5, 0, 0, 101, 102); // a feeder and its two loader workers
        process(101, 20, 0, 0, 0);
        process(102, 20, 0, 0, 0);
        assertTrue(Double.isNaN(cpu.secondsPerSample(0, 0)), "one reading says nothing yet");
        // worker 101 burned 10 more ticks and ended (reaped: its 30 in the feeder's cutime), 102 burned 20 more
        process(100, 20, 5, 30, 0, 102);
        process(102, 40, 0, 0, 0);
        // 15 + 20 + 20 = 55 ticks, then 25 + 30 + 40 = 95: 40 ticks, 0.4 s, for 100 samples
        assertEquals(0.004, cpu.secondsPerSample(S, 100), 1e-12);
        assertEquals(0.004, cpu.secondsPerSample(S + S / 10, 120), 1e-12, "asked again at once: no new reading");
        assertEquals(1.0, cpu.coresAt(250, S + S / 5, 120), 1e-12, "a lane at 250 samples/s spends a core");
        assertEquals(0, cpu.coresAt(0, S + S / 5, 120), "a pace not known: nothing said");
    }

    @Test
    void nothingPublishedOrNoProcessSaysNothing() throws IOException {
        LoadCpu idle = new LoadCpu(proc, 200);
        process(200, 10, 0, 0, 0);
        idle.secondsPerSample(0, 50);
        process(200, 90, 0, 0, 0);
        assertTrue(Double.isNaN(idle.secondsPerSample(S, 50)), "no sample published: no cost known");
        assertEquals(0, idle.coresAt(300, 2 * S, 50), "no cost known: a lane is judged by the idle floor alone");
        assertTrue(Double.isNaN(new LoadCpu(proc, 999).secondsPerSample(0, 0)), "no such process");
    }

    @Test
    void thisProcessBurningCpuCostsWhatItBurned() {
        LoadCpu cpu = LoadCpu.of(ProcessHandle.current().pid());
        var threads = ManagementFactory.getThreadMXBean();
        cpu.secondsPerSample(0, 0);
        long burnt = threads.getCurrentThreadCpuTime();
        long sink = 0;
        while (threads.getCurrentThreadCpuTime() - burnt < 300_000_000L) {
            sink += System.nanoTime() % 7;
        }
        double perSample = cpu.secondsPerSample(S, 100);
        assertTrue(perSample >= 0.0025, "0.3 s over 100 samples, and whatever else this JVM ran: " + perSample + sink);
    }
}
