package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Leaving an epoch early skips the rest of it even when the rest is far longer than the arena holds. */
@Timeout(30)
class SkipAheadTest {
    @TempDir
    Path tmp;

    @Test
    void skippingTheRestOfAnEpochLongerThanTheArenaReleasesAsItGoes() {
        String spec = "samples=1000,shape=4,dtype=float32,seed=1";
        // 5 slots of 10 samples; the skipped remainder is 99 batches. Waiting for all of them before releasing
        // any would stall until the (here one minute) stall timeout evicted this consumer.
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("skip"))
                        .source(new SyntheticSource(SyntheticSpec.parse(spec), 10))
                        .slots(5)
                        .rubberBand(0)
                        .epochs(2)
                        .stallTimeout(Duration.ofMinutes(1))
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("skip"), ConsumerOptions.batchSize(10));
                SyntheticVerifier v = new SyntheticVerifier(SyntheticSpec.parse(spec))) {
            c.iterator().next(); // leave epoch 0 after its first batch
            long started = System.nanoTime();
            for (Batch b : c) {
                assertEquals(1, b.epoch());
                v.accept(b, c.streamPosition(b));
            }
            assertTrue(v.finishEpoch().exact(1000));
            assertTrue(System.nanoTime() - started < 10_000_000_000L, "skipping took until the stall timeout");
        }
    }
}
