package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The producer answers a status request on its control socket with what it and its consumers are doing. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StatusTest {
    @TempDir
    Path tmp;

    @Test
    void statusShowsEachConsumerItsPositionLagAndReportedWaitAndWork() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=640,shape=4,dtype=float32,seed=1");
        Path dir = tmp.resolve("p");
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(spec, 16))
                .epochs(0)
                .minConsumers(2)
                .startGrace(Duration.ZERO)
                .slots(8)
                .build()) { // no grace: its wait would outweigh the work
            ProducerStatus waiting = TensorProducer.queryStatus(dir, Duration.ofSeconds(5));
            assertEquals(ProducerStatus.State.WAITING_FOR_CONSUMERS, waiting.state());
            assertEquals(0, waiting.consumersAttached());
            assertEquals(16, waiting.producerBatchSize());
            assertEquals(640, waiting.samplesPerEpoch());

            p.start();
            try (TensorConsumer a = TensorConsumer.connect(dir, ConsumerOptions.batchSize(16));
                    TensorConsumer b = TensorConsumer.connect(dir, ConsumerOptions.batchSize(40))) {
                Iterator<Batch> ia = a.iterator();
                Iterator<Batch> ib = b.iterator();
                for (int i = 0; i < 5; i++) {
                    ia.next();
                    Thread.sleep(300); // "work", so the consumer reports more work than wait
                }
                ib.next();
                // the release of a batch that followed a wait reaches the producer at the consumer's next call,
                // and releases travel asynchronously, as progress reports do: call each once more, then ask
                // until they have arrived
                assertTrue(ia.hasNext() && ib.hasNext());
                ProducerStatus s = TensorProducer.queryStatus(dir, Duration.ofSeconds(5));
                for (long deadline = System.nanoTime() + 10_000_000_000L; System.nanoTime() < deadline; ) {
                    if (s.consumers().size() == 2
                            && s.consumers().get(0).position() == 64
                            && s.consumers().get(1).position() == 32
                            && s.consumers().get(0).workNanos() > 0) {
                        break;
                    }
                    Thread.sleep(20);
                    s = TensorProducer.queryStatus(dir, Duration.ofSeconds(5));
                }
                assertEquals(ProducerStatus.State.SERVING, s.state());
                assertEquals(2, s.consumersAttached());
                assertEquals(2, s.consumers().size());
                ProducerStatus.Consumer ca = s.consumers().get(0);
                ProducerStatus.Consumer cb = s.consumers().get(1);
                assertEquals(16, ca.batchSize());
                assertEquals(40, cb.batchSize());
                assertEquals(ProcessHandle.current().pid(), ca.pid());
                assertEquals(System.getProperty("user.name"), ca.user());
                assertEquals(StartMode.EPOCH_START, ca.startMode());
                // a released its first 4 batches (the 5th is current); b released the first producer batch of two
                assertEquals(64, ca.position());
                assertEquals(32, cb.position());
                assertTrue(ca.lagSamples() > 0 && ca.lagSamples() <= 8 * 16, ca.toString());
                assertTrue(ca.batchesHeld() >= 1, ca.toString());
                assertTrue(ca.reported(), ca.toString());
                assertTrue(ca.workNanos() > ca.waitNanos(), ca.toString());
                assertTrue(s.batchesPublished() >= 4 && s.slotsInUse() >= 1 && s.slotsInUse() <= 8, s.toString());
                assertTrue(s.samplesPerSecond() >= 0);
            }
        }
    }

    @Test
    void aMissingProducerIsReportedAsNotFound() {
        assertThrows(
                ProducerNotFoundException.class,
                () -> TensorProducer.queryStatus(tmp.resolve("none"), Duration.ofSeconds(1)));
    }
}
