package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A consumer asleep in {@code next()}, handed its batches through a descriptor ring or over its socket: closing
 * it from another thread ends the wait at once with an error that says so, and a producer that closes while
 * the consumer sleeps is reported, not waited out.
 */
@Timeout(60)
class WaitingConsumerTest {
    @TempDir
    Path tmp;

    /** A producer that waits for a second consumer that never comes, so the one consumer sleeps in {@code next()}. */
    private TensorProducer stalledProducer(String name) {
        return TensorProducer.builder()
                .directory(tmp.resolve(name))
                .source(new SyntheticSource(SyntheticSpec.parse("samples=64,shape=4,dtype=float32,seed=1"), 8))
                .minConsumers(2)
                .build()
                .start();
    }

    /** Starts iterating {@code c} on another thread; returns what ended its wait. */
    private static Thread iterate(TensorConsumer c, AtomicReference<Throwable> ended) {
        return Thread.ofPlatform().start(() -> {
            try {
                c.iterator().next();
                ended.set(new AssertionError("next() returned a batch from a producer that publishes none"));
            } catch (Throwable t) {
                ended.set(t);
            }
        });
    }

    @ParameterizedTest(name = "ring hand-off {0}")
    @ValueSource(booleans = {true, false})
    void closingAConsumerFromAnotherThreadEndsItsWaitAtOnce(boolean ring) throws Exception {
        try (TensorProducer p = stalledProducer("close")) {
            TensorConsumer c = TensorConsumer.connect(
                    tmp.resolve("close"), ConsumerOptions.batchSize(8).withRingHandoff(ring));
            assertEquals(ring, c.ringHandoff());
            AtomicReference<Throwable> ended = new AtomicReference<>();
            Thread t = iterate(c, ended);
            Thread.sleep(300); // asleep by now: on the ring's futex, or in the socket's selector
            long closed = System.nanoTime();
            c.close();
            t.join(TimeUnit.SECONDS.toMillis(10));
            assertFalse(t.isAlive(), "next() still waits after its consumer was closed");
            assertTrue(
                    System.nanoTime() - closed < TimeUnit.SECONDS.toNanos(5),
                    "the wait outlasted the close by seconds");
            assertNotNull(ended.get());
            assertTrue(
                    String.valueOf(ended.get().getMessage()).contains("closed"),
                    ended.get().toString());
        }
    }

    @ParameterizedTest(name = "ring hand-off {0}")
    @ValueSource(booleans = {true, false})
    void aProducerClosedWhileTheConsumerSleepsIsReported(boolean ring) throws Exception {
        TensorProducer p = stalledProducer("gone");
        try (TensorConsumer c = TensorConsumer.connect(
                tmp.resolve("gone"),
                ConsumerOptions.batchSize(8).withRingHandoff(ring).withBatchTimeout(Duration.ofSeconds(30)))) {
            AtomicReference<Throwable> ended = new AtomicReference<>();
            Thread t = iterate(c, ended);
            Thread.sleep(300);
            p.close();
            t.join(TimeUnit.SECONDS.toMillis(10));
            assertFalse(t.isAlive(), "next() still waits after its producer closed");
            assertTrue(ended.get() instanceof ProducerGoneException, String.valueOf(ended.get()));
            assertTrue(ended.get().getMessage().contains("closed"), ended.get().getMessage());
        }
    }
}
