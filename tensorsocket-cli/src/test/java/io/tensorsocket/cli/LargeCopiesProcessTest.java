package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code tensorsocket --version} says from which size large copies into slots go past the cache: the threshold a
 * {@code GLIBC_TUNABLES} in the JVM's environment sets (as the launchers set it, see {@code bin/copy-tuning}), or
 * the C library's own where none is set.
 */
class LargeCopiesProcessTest extends ProcessTestBase {
    private static final String LINE = "large copies: the C library's memmove, past the cache from ";

    @Test
    void versionNamesTheThresholdGlibcTunablesSets() throws Exception {
        Proc p = startCommand(
                Launcher.javaCommand("--version"),
                Map.of(
                        "GLIBC_TUNABLES",
                        "glibc.cpu.x86_rep_movsb_threshold=4096:glibc.cpu.x86_non_temporal_threshold=12345678"));
        p.awaitLine(l -> l.equals(LINE + "12345678 bytes (GLIBC_TUNABLES)"), Duration.ofSeconds(60));
        assertEquals(0, p.exitCode(Duration.ofSeconds(30)), p.stderr());
    }

    @Test
    void versionSaysTheCLibraryChoseWhereNoSettingNamesTheThreshold() throws Exception {
        Proc p = startCommand(Launcher.javaCommand("--version"), Map.of("GLIBC_TUNABLES", ""));
        p.awaitLine(l -> l.equals(LINE + "the size the C library chose"), Duration.ofSeconds(60));
        assertEquals(0, p.exitCode(Duration.ofSeconds(30)), p.stderr());
    }
}
