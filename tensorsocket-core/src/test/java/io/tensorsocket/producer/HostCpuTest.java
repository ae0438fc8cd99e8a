package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The idle cores a lane may spend: the host's idle share of its cores, no more than a cgroup's quota leaves. */
class HostCpuTest {
    private static final long S = 1_000_000_000L;

    @TempDir
    Path dir;

    private void stat(long idle, long busy) throws IOException {
        // user nice system idle iowait irq softirq steal: busy split over user and system, idle over idle and iowait
        Files.writeString(
                dir.resolve("stat"),
                "cpu  " + busy / 2 + " 0 " + (busy - busy / 2) + " " + (idle - 10) + " 10 0 0 0 0 0\ncpu0 1 2 3 4\n");
    }

    private void cgroup(String max, long usageMicros) throws IOException {
        Files.writeString(dir.resolve("cpu.max"), max + "\n");
        Files.writeString(dir.resolve("cpu.stat"), "usage_usec " + usageMicros + "\nuser_usec 1\n");
    }

    @Test
    void theHostsIdleShareOfItsCoresOverTheReadings() throws IOException {
        HostCpu cpu = new HostCpu(dir.resolve("stat"), dir.resolve("none"), 2);
        stat(1000, 1000);
        assertTrue(Double.isNaN(cpu.idleCores(0)), "one reading says nothing yet");
        stat(1300, 1700); // of the next 1000 ticks, 300 idle: 0.3 of 2 cores
        assertEquals(0.6, cpu.idleCores(S), 1e-9);
        stat(1300, 1700);
        assertEquals(0.6, cpu.idleCores(S + S / 10), 1e-9, "asked again at once: no new reading");
    }

    @Test
    void aCgroupQuotaBoundsWhatIsIdle() throws IOException {
        HostCpu cpu = new HostCpu(dir.resolve("stat"), dir, 16);
        stat(0, 0);
        cgroup("150000 100000", 0); // 1.5 cores
        cpu.idleCores(0);
        stat(1200, 400); // the host: 0.75 of 16 cores idle
        cgroup("150000 100000", 1_200_000); // the cgroup used 1.2 s in 1 s: 0.3 of its 1.5 cores left
        assertEquals(0.3, cpu.idleCores(S), 1e-9);
        cgroup("max 100000", 1_200_000);
        stat(2400, 800);
        assertEquals(12, cpu.idleCores(2 * S), 1e-9, "no quota: the host's idle cores");
    }

    @Test
    void aHostThatDoesNotSayIsNotKnown() {
        assertTrue(Double.isNaN(new HostCpu(dir.resolve("missing"), dir, 2).idleCores(0)));
    }
}
