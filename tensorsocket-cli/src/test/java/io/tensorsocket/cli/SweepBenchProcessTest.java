package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The sweep benchmark the README shows, run as it shows it (shortened): it finishes, prints both rows and its ratio,
 * and leaves nothing behind. What its numbers are is the benchmark's business, which is why this class runs beside
 * the others instead of alone.
 */
@Timeout(240)
class SweepBenchProcessTest extends PyTorchFeederTestBase {

    @Test
    void theSweepBenchmarkRunsAsTheReadmeShowsIt() throws Exception {
        assumePython("numpy", "torch", "torchvision", "PIL");
        Path home = Files.createTempDirectory("tensorsocket-bench-home-");
        try {
            // The README's command, shortened: 2 jobs, 1 s each, 20 JPEGs. Its numbers are the README's business.
            Proc bench = startPython(
                    Map.of("HOME", home.toString()),
                    pythonClient().resolve("examples/sweep_bench.py").toString(),
                    "--jobs",
                    "2",
                    "--seconds",
                    "1",
                    "--count",
                    "20");
            assertEquals(0, bench.exitCode(Duration.ofMinutes(3)), bench.stderr());
            assertTrue(
                    bench.lines().stream().anyMatch(l -> l.startsWith("shared vs private: ")),
                    bench.lines().toString());
            Map<String, String> result = bench.json().getLast();
            assertTrue(
                    Double.parseDouble(result.get("private")) > 0 && Double.parseDouble(result.get("shared")) > 0,
                    result.toString());
            assertTrue(
                    bench.lines().stream()
                                    .filter(l -> l.matches("(private|shared) +all .*"))
                                    .count()
                            == 2,
                    bench.lines().toString());
            assertNothingLeft("sweep-bench", 30);
        } finally {
            try (var files = Files.walk(home)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
