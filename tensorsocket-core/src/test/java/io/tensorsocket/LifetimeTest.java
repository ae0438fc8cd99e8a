package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Batch lifetimes, leaving, closing and the errors around them, in one JVM. */
@Timeout(60)
class LifetimeTest {
    @TempDir
    Path tmp;

    private TensorProducer producer(String name, int samples, int batch, long epochs) {
        return TensorProducer.builder()
                .directory(tmp.resolve(name))
                .source(new SyntheticSource(
                        SyntheticSpec.parse("samples=" + samples + ",shape=4x4,dtype=float32,seed=1"), batch))
                .epochs(epochs)
                .build();
    }

    @Test
    void aReleasedBatchCannotBeReadThroughAnyPath() {
        try (TensorProducer p = producer("lease", 100, 10, 1).start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("lease"), ConsumerOptions.batchSize(10))) {
            Iterator<Batch> it = c.iterator();
            Batch zeroCopy = it.next();
            Tensor data = zeroCopy.tensor("data");
            var segment = data.data();
            assertTrue(segment.isReadOnly(), "consumers get read-only views");
            float first = data.getFloat(0);
            Batch next = it.next(); // releases the first batch
            assertTrue(zeroCopy.isReleased());
            assertThrows(BatchReleasedException.class, () -> data.getFloat(0));
            assertThrows(BatchReleasedException.class, data::data);
            assertThrows(BatchReleasedException.class, () -> zeroCopy.tensor("data"));
            try { // closed at once, or, if the consumer had waited for the next batch, at its next call
                assertEquals(first, segment.get(ValueLayout.JAVA_FLOAT, 0), "never recycled bytes");
            } catch (IllegalStateException closedAlready) {
                assertTrue(closedAlready.getMessage().contains("closed"), closedAlready.toString());
            }
            assertTrue(it.hasNext());
            assertThrows(
                    IllegalStateException.class,
                    () -> segment.get(ValueLayout.JAVA_FLOAT, 0),
                    "from the consumer's next call on the raw view is closed by the JDK too");
            assertNotEquals(Float.NaN, first);
            next.close();
            assertThrows(BatchReleasedException.class, () -> next.tensor("id"));
            next.close(); // idempotent
        }
    }

    @Test
    void threadConfinedBatchesAreWholeInTheirThreadInvalidatedOnReleaseAndRefusedToOthers() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=100,shape=4x4,dtype=float32,seed=1");
        try (TensorProducer p = producer("confined", 100, 10, 1).start();
                TensorConsumer c = TensorConsumer.connect(
                        tmp.resolve("confined"), ConsumerOptions.batchSize(15).withThreadConfinedBatches(true))) {
            Set<Long> seen = new HashSet<>();
            Batch kept = null;
            var keptRaw = (MemorySegment) null;
            for (Batch b : c) { // zero-copy and gathered batches alike (15 does not divide 10)
                Tensor ids = b.tensor("id");
                Tensor data = b.tensor("data");
                for (int i = 0; i < b.size(); i++) {
                    long id = ids.getLong(i);
                    assertTrue(seen.add(id), "sample " + id + " twice");
                    float[] expected = new float[16];
                    var scratch = MemorySegment.ofArray(expected);
                    spec.fill(id, scratch);
                    assertEquals(
                            expected[5], data.data().getAtIndex(ValueLayout.JAVA_FLOAT, i * 16L + 5), "sample " + id);
                }
                if (kept == null) {
                    kept = b;
                    keptRaw = data.data();
                    Batch mine = b;
                    var other = new AtomicReference<Throwable>();
                    Thread t = Thread.ofPlatform().start(() -> {
                        try {
                            mine.tensor("data").data().get(ValueLayout.JAVA_FLOAT, 0);
                        } catch (Throwable e) {
                            other.set(e);
                        }
                    });
                    t.join();
                    assertInstanceOf(
                            WrongThreadException.class, other.get(), "another thread may not read a confined batch");
                }
            }
            assertEquals(100, seen.size(), "every sample once");
            assertTrue(kept.isReleased());
            Batch first = kept;
            assertThrows(BatchReleasedException.class, () -> first.tensor("id"));
            var raw = keptRaw;
            assertThrows(
                    IllegalStateException.class,
                    () -> raw.get(ValueLayout.JAVA_FLOAT, 0),
                    "its raw view was closed when it was released");
        }
    }

    @Test
    void aThreadConfinedBatchReleasedByAnotherThreadRefusesItsAccessorsThere() throws Exception {
        try (TensorProducer p = producer("confined-close", 100, 10, 1).start();
                TensorConsumer c = TensorConsumer.connect(
                        tmp.resolve("confined-close"),
                        ConsumerOptions.batchSize(10).withThreadConfinedBatches(true))) {
            Batch b = c.iterator().next();
            Thread t = Thread.ofPlatform().start(b::close); // no WrongThreadException: the lease ends all the same
            t.join();
            assertTrue(b.isReleased());
            assertThrows(BatchReleasedException.class, () -> b.tensor("data"));
        }
    }

    @Test
    void aConsumerClosedByAnotherThreadKeepsAThreadConfinedBatchsMemoryMapped() throws Exception {
        try (TensorProducer p = producer("confined-consumer-close", 100, 10, 1).start()) {
            TensorConsumer c = TensorConsumer.connect(
                    tmp.resolve("confined-consumer-close"),
                    ConsumerOptions.batchSize(10).withThreadConfinedBatches(true));
            Batch b = c.iterator().next();
            var raw = b.tensor("data").data();
            float before = raw.get(ValueLayout.JAVA_FLOAT, 0);
            Thread t = Thread.ofPlatform().start(c::close); // against the option's rule, from another thread
            t.join();
            assertThrows(BatchReleasedException.class, () -> b.tensor("data"));
            // the view's scope could not be closed from there, so its memory stayed mapped: reading it does not crash
            // the JVM (the bytes may be a later batch's: the slot went back to the producer)
            float after = raw.get(ValueLayout.JAVA_FLOAT, 0);
            assertTrue(before >= 0 && before < 1 && after >= 0 && after < 1, before + ", " + after);
        }
    }

    @Test
    void aGatheredBatchIsInvalidatedToo() {
        try (TensorProducer p = producer("gather", 100, 10, 1).start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("gather"), ConsumerOptions.batchSize(15))) {
            Iterator<Batch> it = c.iterator();
            it.next();
            Batch spanning = it.next(); // samples 15..29 span two producer batches
            Tensor ids = spanning.tensor("id");
            var raw = ids.data();
            long id = ids.getLong(0);
            it.next();
            assertThrows(BatchReleasedException.class, () -> ids.getLong(0));
            assertThrows(IllegalStateException.class, () -> raw.get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
            assertTrue(id >= 0);
        }
    }

    @Test
    void aCopyOutlivesItsBatch() {
        try (TensorProducer p = producer("copy", 50, 10, 1).start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("copy"), ConsumerOptions.batchSize(10))) {
            Iterator<Batch> it = c.iterator();
            Batch b = it.next();
            Tensor kept = b.tensor("id").copy();
            long[] ids = b.tensor("id").toLongArray();
            b.close();
            assertArrayEquals(ids, kept.toLongArray());
        }
    }

    @Test
    void aConsumerThatLeavesMidEpochDoesNotHoldUpTheOthers() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=2000,shape=4x4,dtype=float32,seed=1");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("leave"))
                        .source(new SyntheticSource(spec, 10))
                        .epochs(2)
                        .minConsumers(2)
                        .stallTimeout(Duration.ofSeconds(60))
                        .build()
                        .start();
                TensorConsumer stays = TensorConsumer.connect(tmp.resolve("leave"), ConsumerOptions.batchSize(16))) {
            TensorConsumer leaves = TensorConsumer.connect(tmp.resolve("leave"), ConsumerOptions.batchSize(10));
            Iterator<Batch> it = leaves.iterator();
            for (int i = 0; i < 5; i++) {
                it.next();
            }
            leaves.close();
            assertThrows(IllegalStateException.class, it::next);
            long started = System.nanoTime();
            try (SyntheticVerifier v = new SyntheticVerifier(spec)) {
                for (int e = 0; e < 2; e++) {
                    for (Batch b : stays) {
                        v.accept(b, stays.streamPosition(b));
                    }
                    assertTrue(v.finishEpoch().exact(2000));
                }
            }
            assertTrue((System.nanoTime() - started) / 1e9 < 30);
        }
    }

    @Test
    void closingTheProducerTellsConsumersAndRemovesItsFiles() {
        Path dir = tmp.resolve("closing");
        TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(SyntheticSpec.parse("samples=100000,shape=4"), 10))
                .epochs(0)
                .build()
                .start();
        try (TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10))) {
            Iterator<Batch> it = c.iterator();
            it.next();
            p.close();
            ProducerGoneException e = assertThrows(ProducerGoneException.class, () -> {
                while (true) {
                    it.next();
                }
            });
            assertTrue(e.getMessage().contains("was closed"), e.getMessage());
        }
        assertFalse(Files.exists(dir), "the producer removes its directory");
    }

    @Test
    void breakingOutOfAnEpochSkipsToTheNextOne() {
        try (TensorProducer p = producer("skip", 100, 10, 3).start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("skip"), ConsumerOptions.batchSize(10))) {
            for (Batch b : c) {
                assertEquals(0, b.epoch());
                break;
            }
            long n = 0;
            for (Batch b : c) {
                assertEquals(1, b.epoch());
                assertEquals(n * 10, b.sampleStart());
                n++;
            }
            assertEquals(10, n);
            assertEquals(1, c.epoch());
        }
    }

    @Test
    void sizeIsBatchesPerEpochAtTheConsumersBatchSize() {
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("size"))
                        .source(new SyntheticSource(SyntheticSpec.parse("samples=1003"), 16))
                        .minConsumers(2)
                        .build()
                        .start();
                TensorConsumer keep = TensorConsumer.connect(tmp.resolve("size"), ConsumerOptions.batchSize(10));
                TensorConsumer drop = TensorConsumer.connect(
                        tmp.resolve("size"), ConsumerOptions.batchSize(10).withDropLast(true))) {
            assertEquals(101, keep.size());
            assertEquals(100, drop.size());
            assertEquals(1003, keep.samplesPerEpoch());
            assertEquals(16, keep.producerBatchSize());
        }
    }

    @Test
    void aSecondProducerInTheSameDirectoryIsRefused() {
        try (TensorProducer p = producer("twice", 10, 2, 1)) {
            ProducerAlreadyRunningException e =
                    assertThrows(ProducerAlreadyRunningException.class, () -> producer("twice", 10, 2, 1));
            assertTrue(e.getMessage().contains("already"), e.getMessage());
        }
    }

    @Test
    void producerWithoutConsumersStopsAfterItsIdleTimeout() {
        try (TensorProducer p = TensorProducer.builder()
                .directory(tmp.resolve("idle"))
                .source(new SyntheticSource(SyntheticSpec.parse("samples=10"), 2))
                .idleTimeout(Duration.ofMillis(300))
                .build()) {
            TensorSocketTimeoutException e = assertThrows(TensorSocketTimeoutException.class, p::run);
            assertEquals(
                    "producer 'idle' stopped: no consumer attached within 300 ms (the idle timeout, --idle-timeout-s);"
                            + " raise it to wait longer",
                    e.getMessage());
        }
    }

    /** A producer of 10 samples in batches of 2 in {@code name} that serves until stopped ({@code --epochs 0}). */
    private TensorProducer.Builder untilStopped(String name) {
        return TensorProducer.builder()
                .directory(tmp.resolve(name))
                .source(new SyntheticSource(SyntheticSpec.parse("samples=10"), 2))
                .epochs(0);
    }

    @Test
    void aProducerWhoseConsumersCameAndLeftEndsNormallyAtItsIdleTimeout() throws Exception {
        try (TensorProducer p =
                untilStopped("done").idleTimeout(Duration.ofMillis(300)).build().start()) {
            try (TensorConsumer c = TensorConsumer.connect(tmp.resolve("done"), ConsumerOptions.batchSize(2))) {
                int samples = 0;
                for (Batch b : c) {
                    samples += b.size();
                }
                assertEquals(10, samples);
            }
            assertTrue(p.await(Duration.ofSeconds(30)), "ended at its idle timeout, without a failure");
            assertTrue(p.isFinished());
        }
    }

    @Test
    void aProducerThatServesUntilStoppedHasNoIdleTimeoutUnlessOneIsGiven() throws Exception {
        try (TensorProducer p = untilStopped("forever").build().start()) {
            assertFalse(p.await(Duration.ofMillis(1500)), "an unbounded producer without consumers keeps waiting");
        }
        try (TensorProducer p =
                untilStopped("bounded").idleTimeout(Duration.ofMillis(300)).build()) {
            TensorSocketTimeoutException e = assertThrows(TensorSocketTimeoutException.class, p::run);
            assertTrue(
                    e.getMessage().startsWith("producer 'bounded' stopped: no consumer attached within"),
                    e.getMessage());
        }
    }

    @Test
    void aSourceThatBreaksItsDeclaredLengthFailsTheProducer() throws Exception {
        SyntheticSource real = new SyntheticSource(SyntheticSpec.parse("samples=10"), 2);
        BatchSource liar = new BatchSource() {
            @Override
            public BatchLayout layout() {
                return real.layout();
            }

            @Override
            public long samplesPerEpoch() {
                return 12;
            }

            @Override
            public void emitEpoch(long epoch, BatchSink sink) throws Exception {
                real.emitEpoch(epoch, sink);
            }
        };
        ProvokedFailureLog.expect("producer 'liar' failed", () -> {
            try (TensorProducer p = TensorProducer.builder()
                            .directory(tmp.resolve("liar"))
                            .source(liar)
                            .build()
                            .start();
                    TensorConsumer c = TensorConsumer.connect(tmp.resolve("liar"), ConsumerOptions.batchSize(2))) {
                ProducerFailedException e = assertThrows(ProducerFailedException.class, () -> {
                    for (Batch b : c) {
                        b.size();
                    }
                });
                assertTrue(
                        e.getMessage().contains("declared 12 samples per epoch but epoch 0 yielded 10"),
                        e.getMessage());
            }
        });
    }
}
