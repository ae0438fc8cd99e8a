package io.tensorsocket.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.directory.ProducerDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a share refuses before it starts anything, and how it tells a running producer's arguments from its own. */
class SharedServeTest {
    private final SharedServe share =
            new SharedServe("s", List.of("--synthetic", "samples=10", "--batch-size", "5"), Duration.ofSeconds(3));

    @Test
    void argumentsTheShareSetsItselfAndAnIdleLingerAreRefused() {
        for (String a : List.of("--name", "--dir", "--idle-timeout-s", "--share-key")) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> new SharedServe("s", List.of(a, "x"), Duration.ofSeconds(3)));
            assertTrue(e.getMessage().contains("may not set " + a), e.getMessage());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new SharedServe("s", List.of(), Duration.ZERO))
                .getMessage()
                .contains("linger must be positive"));
    }

    @Test
    void aRunningProducerStartedByHandOrWithOtherArgumentsIsNamedAsSuch(@TempDir Path dir) throws Exception {
        assertEquals(
                "it was not started by a share (it serves synthetic:samples=10)",
                share.mismatch(dir, "synthetic:samples=10"));
        Files.writeString(dir.resolve(ProducerDirectory.SHARE_FILE), "--synthetic\nsamples=20\n--batch-size\n5");
        assertEquals(
                "it was started with serve --synthetic samples=20 --batch-size 5, this caller asks for serve"
                        + " --synthetic samples=10 --batch-size 5",
                share.mismatch(dir, "synthetic:samples=20"));
        Files.writeString(dir.resolve(ProducerDirectory.SHARE_FILE), share.key());
        assertNull(share.mismatch(dir, "synthetic:samples=10"));
    }
}
