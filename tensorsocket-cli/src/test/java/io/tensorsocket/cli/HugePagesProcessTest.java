package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The arena's page size through the CLI, as the README describes it: a producer serves from an arena in 2 MiB
 * pages by default and says so, a consumer started beside it reads every sample intact, and with
 * {@code TENSORSOCKET_HUGE_PAGES=0} the arena keeps 4 KiB pages.
 */
class HugePagesProcessTest extends ProcessTestBase {
    /** 64 samples of 3×64×64 float32 a batch: 3 MiB slots, so the arena has whole 2 MiB pages. */
    private static final String DATA = "samples=1280,shape=3x64x64,seed=7";

    @Test
    void byDefaultTheArenaIsInTwoMiBPagesAndEverySampleArrivesIntact() throws Exception {
        Proc producer = serve("huge", DATA, 64, 1);
        Proc consumer = consume("huge", 32);
        // consume checks every sample's bytes against the synthetic source and fails on any difference
        consumer.awaitLine(l -> l.contains("\"unique\": 1280") && l.contains("\"corrupt\": 0"), Duration.ofSeconds(60));
        assertEquals(0, consumer.exitCode(Duration.ofSeconds(60)), consumer.stderr());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
        assumeFalse(
                producer.stderr().contains("(64 samples each) in 4 KiB pages"),
                "this kernel kept 4 KiB pages (MADV_COLLAPSE needs Linux 6.1 and shared-memory huge pages not denied)");
        assertTrue(producer.stderr().contains("(64 samples each) in 2 MiB pages"), producer.stderr());
    }

    @Test
    void withTheVariableAtZeroTheArenaKeepsFourKiBPages() throws Exception {
        Proc producer = startCommand(
                Launcher.javaCommand(
                        "serve",
                        "--name",
                        "small",
                        "--synthetic",
                        DATA,
                        "--batch-size",
                        "64",
                        "--epochs",
                        "1",
                        "--start-grace-ms",
                        "0"),
                Map.of("TENSORSOCKET_HUGE_PAGES", "0"));
        producer.awaitReady();
        Proc consumer = consume("small", 64);
        consumer.awaitLine(l -> l.contains("\"unique\": 1280") && l.contains("\"corrupt\": 0"), Duration.ofSeconds(60));
        assertEquals(0, consumer.exitCode(Duration.ofSeconds(60)), consumer.stderr());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
        assertTrue(producer.stderr().contains("(64 samples each) in 4 KiB pages"), producer.stderr());
        assertFalse(producer.stderr().contains("2 MiB pages"), producer.stderr());
    }
}
