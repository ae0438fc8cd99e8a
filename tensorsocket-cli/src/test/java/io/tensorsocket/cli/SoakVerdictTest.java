package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the soak judges a consumer that was attached when it killed the producer: told of the producer's death, or,
 * if the soak had stalled it, evicted for that stall just before (the producer judged the stall first); an eviction
 * of a consumer the soak never stalled is a failure.
 */
class SoakVerdictTest {
    private static final String EVICTED = "tensorsocket: error: producer 'soak': consumer 11 (pid 23410, batch size 7)"
            + " did not answer its move to lane 1 within 2000 ms; it was disconnected. Release batches sooner (close"
            + " them or ask for the next), or raise the producer's stall timeout";

    @TempDir
    Path tmp;

    @Test
    void aStalledConsumerEvictedBeforeTheProducerDiedCountsAsAnEviction() throws Exception {
        SoakVerdict v = new SoakVerdict();
        v.judge(exited(EVICTED, true), 600);
        assertEquals(1, v.evictions);
        assertEquals(0, v.toldProducerGone);
        assertTrue(v.ok(), v.failures.toString());
    }

    @Test
    void aConsumerNeverStalledThatSaysItWasEvictedFailsTheSoak() throws Exception {
        SoakVerdict v = new SoakVerdict();
        v.judge(exited(EVICTED, false), 600);
        assertEquals(0, v.evictions);
        assertFalse(v.ok());
        assertTrue(v.failures.getFirst().contains("did not report the producer's death"), v.failures.toString());
    }

    @Test
    void aConsumerToldOfTheProducersDeathCountsAsTold() throws Exception {
        SoakVerdict v = new SoakVerdict();
        v.judge(exited("tensorsocket: error: lost the connection to producer 'soak' (pid 1): it exited", true), 600);
        assertEquals(1, v.toldProducerGone);
        assertTrue(v.ok(), v.failures.toString());
    }

    /** A real process that exited 1 having said {@code errorLine}, attached when the producer was killed. */
    private SoakChild exited(String errorLine, boolean stalled) throws Exception {
        Path err = Files.createTempFile(tmp, "consumer-", ".err");
        Files.writeString(err, errorLine + "\n");
        Process p = new ProcessBuilder("sh", "-c", "exit 1").start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        SoakChild c = new SoakChild(p, 11, err);
        c.reader.join(10_000);
        c.expectProducerGone = true;
        c.stalled = stalled;
        return c;
    }
}
