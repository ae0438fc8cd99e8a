package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import org.junit.jupiter.api.Test;

/** The producer dies, is replaced, or is refused: consumers get a specific error quickly, never a hang. */
class FailureProcessTest extends ProcessTestBase {

    @Test
    void killedProducerMakesConsumersFailWithinASecond() throws Exception {
        Proc producer = serve("dies", "samples=100000,shape=8,dtype=float32,seed=1", 10, 0);
        Proc a = consume("dies", 10, "--step-ms", "2", "--progress-ms", "100");
        Proc b = consume("dies", 45, "--step-ms", "2", "--progress-ms", "100");
        for (Proc c : new Proc[] {a, b}) { // both are iterating (a JVM's start takes seconds on a loaded machine)
            c.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30));
        }
        long killedAt = System.nanoTime();
        producer.kill();
        for (Proc c : new Proc[] {a, b}) {
            assertNotEquals(0, c.exitCode(Duration.ofSeconds(10)));
            assertTrue(c.errorLine().contains("lost the connection to producer 'dies'"), c.errorLine());
        }
        double seconds = (System.nanoTime() - killedAt) / 1e9;
        // one second to notice, plus the JVMs' own exit
        assertTrue(seconds < 3, "consumers took " + seconds + " s to fail");
    }

    @Test
    void nextCallAfterTheProducerIsKilledThrowsWithinOneSecond() throws Exception {
        Proc producer = serve("gone", "samples=100000,shape=8,dtype=float32,seed=1", 10, 0);
        try (TensorConsumer c = TensorConsumer.connect(base.resolve("gone"), ConsumerOptions.batchSize(10))) {
            Iterator<Batch> it = c.iterator();
            for (int i = 0; i < 20; i++) {
                it.next();
            }
            producer.kill();
            long killed = System.nanoTime();
            ProducerGoneException e = assertThrows(ProducerGoneException.class, () -> {
                while (true) {
                    it.next();
                }
            });
            double seconds = (System.nanoTime() - killed) / 1e9;
            assertTrue(seconds < 1.0, "took " + seconds + " s");
            assertTrue(e.getMessage().contains("exited or was killed"), e.getMessage());
        }
    }

    @Test
    void aLoaderExceptionReachesEveryConsumerByName() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=1000,shape=4,dtype=float32,seed=1");
        SyntheticSource good = new SyntheticSource(spec, 10);
        BatchSource failing = new BatchSource() {
            @Override
            public BatchLayout layout() {
                return good.layout();
            }

            @Override
            public long samplesPerEpoch() {
                return good.samplesPerEpoch();
            }

            @Override
            public void emitEpoch(long epoch, BatchSink sink) throws Exception {
                int[] n = {0};
                good.emitEpoch(epoch, new BatchSink() {
                    @Override
                    public void put(Batch batch) {
                        sink.put(batch);
                    }

                    @Override
                    public int claimsAhead() {
                        return sink.claimsAhead();
                    }

                    @Override
                    public SlotWriter claim() {
                        if (++n[0] == 30) {
                            throw new UncheckedIOException(
                                    new IOException("disk on fire (a failure this test provokes on purpose)"));
                        }
                        return sink.claim();
                    }
                });
            }

            @Override
            public String description() {
                return good.description();
            }
        };
        Path dir = base.resolve("failing");
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(failing)
                .minConsumers(2)
                .build()) {
            p.start();
            Proc a = start("consume", "--dir", dir.toString(), "--batch-size", "10");
            Proc b = start("consume", "--dir", dir.toString(), "--batch-size", "7");
            for (Proc c : new Proc[] {a, b}) {
                assertEquals(1, c.exitCode(Duration.ofSeconds(30)));
                assertTrue(
                        c.errorLine().contains("failed in epoch 0")
                                && c.errorLine().contains("disk on fire"),
                        c.errorLine());
            }
            ProducerFailedException e =
                    assertThrows(ProducerFailedException.class, () -> p.await(Duration.ofSeconds(10)));
            assertTrue(e.getMessage().contains("disk on fire"));
        }
    }

    @Test
    void restartedProducerReclaimsTheStaleDirectoryAndServesNewConsumers() throws Exception {
        Proc first = serve("phoenix", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        first.kill();
        assertTrue(Files.exists(base.resolve("phoenix").resolve("control.sock")), "a SIGKILL leaves files");
        Proc stale = consume("phoenix", 10, "--connect-timeout-s", "2");
        assertNotEquals(0, stale.exitCode(Duration.ofSeconds(30)));
        assertTrue(stale.errorLine().contains("is not running"), stale.errorLine());

        Proc second = serve("phoenix", "samples=100,shape=4,dtype=float32,seed=1", 10, 1);
        assertTrue(second.stderr().contains("reclaimed"), second.stderr());
        Proc c = consume("phoenix", 10);
        assertEquals(0, c.exitCode(Duration.ofSeconds(30)), c.stderr());
        assertExactEpoch(c.json().getFirst(), 100, "epoch_start");
    }

    @Test
    void aSecondLiveProducerOfTheSameNameIsRefused() throws Exception {
        serve("taken", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        Proc second = start("serve", "--name", "taken", "--synthetic", "samples=10", "--batch-size", "2");
        assertEquals(1, second.exitCode(Duration.ofSeconds(30)));
        assertTrue(second.errorLine().contains("already running"), second.errorLine());
    }

    @Test
    void sigtermStopsTheProducerCleanlyAndRemovesItsFiles() throws Exception {
        Proc producer = serve("term", "samples=100000,shape=4,dtype=float32,seed=1", 10, 0);
        Proc c = consume("term", 10, "--step-ms", "1", "--progress-ms", "100");
        c.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30)); // it is iterating
        producer.signal("TERM");
        producer.exitCode(Duration.ofSeconds(30));
        assertNotEquals(0, c.exitCode(Duration.ofSeconds(10)));
        assertTrue(c.errorLine().contains("was closed"), c.errorLine());
        assertTrue(!Files.exists(base.resolve("term")), "the producer removes its directory on SIGTERM");
    }

    @Test
    void producerWithBoundedEpochsExitsCleanly() throws Exception {
        Proc producer = serve("bounded", "samples=100,shape=4,dtype=float32,seed=1", 10, 3);
        Proc c = consume("bounded", 9);
        assertEquals(0, c.exitCode(Duration.ofSeconds(30)), c.stderr());
        assertEquals(3, c.json().size());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(30)), producer.stderr());
        assertTrue(!Files.exists(base.resolve("bounded")), "the producer removes its directory");
    }
}
