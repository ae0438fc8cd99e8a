package io.tensorsocket.cli;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * {@code serve} where shared memory is as small as in a default Docker container: a real 16 MiB tmpfs as
 * TENSORSOCKET_BASE (skipped, saying why, where mounting is not permitted).
 */
@Isolated // it mounts a small tmpfs
class SmallShmProcessTest extends ProcessTestBase {
    private Path shm;
    private String skip;

    @BeforeEach
    void mountTmpfs() throws Exception {
        shm = Files.createDirectory(base.resolve("shm"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", shm.toString())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), UTF_8).strip();
        if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
            skip = "cannot mount a tmpfs here (" + out + ")";
            System.out.println("SmallShmProcessTest skipped: " + skip);
        }
    }

    @AfterEach
    void unmount() throws Exception {
        if (skip == null) {
            new ProcessBuilder("umount", shm.toString()).inheritIO().start().waitFor(20, TimeUnit.SECONDS);
        }
    }

    private Proc serveOnShm(String... args) throws Exception {
        assumeTrue(skip == null, skip);
        return Proc.start(shm, args);
    }

    private List<Path> leftovers() throws Exception {
        try (Stream<Path> s = Files.walk(shm)) {
            return s.filter(p -> !p.equals(shm)).toList();
        }
    }

    @Test
    void anArenaThatDoesNotFitIsOneLineAndLeavesNothing() throws Exception {
        try (Proc p = serveOnShm(
                "serve", "--name", "big", "--synthetic", "samples=1000", "--batch-size", "64", "--arena-mb", "64")) {
            assertEquals(1, p.exitCode(Duration.ofSeconds(60)), p.stderr());
            String err = p.stderr();
            assertFalse(err.contains("Exception") || err.contains("\tat "), "no stack trace: " + err);
            assertTrue(
                    p.errorLine()
                            .startsWith("tensorsocket: error: not enough shared memory in " + shm.resolve("big")
                                    + ": the arena needs 66408448 bytes (63.3 MiB) but only "),
                    p.errorLine());
            assertTrue(
                    p.errorLine().contains("--shm-size") && p.errorLine().contains("TENSORSOCKET_BASE"), p.errorLine());
            assertEquals(List.of(), leftovers(), "no arena, lock, socket or directory left behind");
        }
    }

    @Test
    void theDefaultArenaFitsAndServesAConsumer() throws Exception {
        try (Proc p = serveOnShm("serve", "--name", "fits", "--synthetic", "samples=640,seed=4", "--batch-size", "64")
                        .awaitReady();
                Proc c = Proc.start(shm, "consume", "--name", "fits", "--batch-size", "32")) {
            assertTrue(
                    p.stderr()
                            .contains("arena of producer 'fits': 10 slots of 772 KiB = 7.5 MiB, because the default"
                                    + " 64 slots (48.3 MiB) would take more than half of the free space"),
                    p.stderr());
            // consume checks every sample's bytes against the synthetic source and fails on any difference
            c.awaitLine(l -> l.contains("\"unique\": 640") && l.contains("\"corrupt\": 0"), Duration.ofSeconds(60));
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            assertEquals(0, p.exitCode(Duration.ofSeconds(60)), p.stderr());
            assertEquals(List.of(), leftovers());
        }
    }
}
