package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A consumer that polls its socket before sleeping gets the same exact epochs as one that sleeps at once. */
@Timeout(60)
class SpinWaitTest {
    @TempDir
    Path tmp;

    @Test
    void aSpinningConsumerGetsEveryEpochExactly() {
        String spec = "samples=600,shape=16,dtype=float32,seed=3";
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("spin"))
                        .source(new SyntheticSource(SyntheticSpec.parse(spec), 32))
                        .epochs(2)
                        .build()
                        .start();
                TensorConsumer spinning = TensorConsumer.connect(
                        tmp.resolve("spin"), ConsumerOptions.batchSize(45).withSpinWait(Duration.ofMillis(2)));
                SyntheticVerifier v = new SyntheticVerifier(SyntheticSpec.parse(spec))) {
            for (int e = 0; e < 2; e++) {
                for (Batch b : spinning) {
                    v.accept(b, spinning.streamPosition(b));
                }
                assertTrue(v.finishEpoch().exact(600), "epoch " + e);
            }
        }
    }

    @Test
    void aSpinLongerThanASecondIsRefused() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ConsumerOptions.batchSize(8).withSpinWait(Duration.ofSeconds(2)));
        assertTrue(e.getMessage().contains("0 to 1 s"), e.getMessage());
    }
}
