package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.arena.BulkCopy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Both ways into the arena: copying finished batches from any loader, and filling claimed slots in place. */
@Timeout(60)
class SourceAdaptersTest {
    @TempDir
    Path tmp;

    /** A plain loader: batches of 4 (x = sample id as float, y = id * 10), the last one short. */
    private static List<Batch> loader(int samples, int epoch) {
        List<Batch> out = new ArrayList<>();
        for (int start = 0; start < samples; start += 4) {
            int n = Math.min(4, samples - start);
            float[] x = new float[n * 2];
            long[] y = new long[n];
            for (int i = 0; i < n; i++) {
                long id = (start + i + epoch * 3L) % samples;
                x[2 * i] = id;
                x[2 * i + 1] = -id;
                y[i] = id * 10;
            }
            out.add(Batch.of("x", Tensor.ofFloats(x, n, 2), "y", Tensor.ofLongs(y, n)));
        }
        return out;
    }

    @Test
    void anIterableLoaderIsCopiedInIncludingItsShortLastBatch() {
        int samples = 18;
        BatchSource source = BatchSource.fromIterable(e -> loader(samples, (int) e), samples);
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("it"))
                        .source(source)
                        .epochs(2)
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("it"), ConsumerOptions.batchSize(5))) {
            for (int e = 0; e < 2; e++) {
                List<Long> ys = new ArrayList<>();
                for (Batch b : c) {
                    Tensor x = b.tensor("x");
                    Tensor y = b.tensor("y");
                    for (int i = 0; i < b.size(); i++) {
                        assertEquals(y.getLong(i), ((long) x.getFloat(2L * i)) * 10);
                        assertEquals(-x.getFloat(2L * i), x.getFloat(2L * i + 1), 0.0f);
                        ys.add(y.getLong(i));
                    }
                }
                List<Long> expected = new ArrayList<>();
                for (Batch b : loader(samples, e)) {
                    for (long v : b.tensor("y").toLongArray()) {
                        expected.add(v);
                    }
                }
                assertEquals(expected, ys, "epoch " + e + " in loader order");
            }
        }
    }

    @Test
    void largeNativeBatchesAreCopiedInByteForByte() {
        // 8 samples of 64x64x16 float32: 2 MiB batches in native memory, the size BulkCopy hands to the C library
        long[] shape = {64, 64, 16};
        int batch = 8;
        long sampleBytes = 64 * 64 * 16 * 4;
        assertTrue(sampleBytes * batch >= BulkCopy.NATIVE_FROM);
        int batches = 6;
        try (Arena memory = Arena.ofShared()) {
            List<Batch> loaded = new ArrayList<>();
            for (int k = 0; k < batches; k++) {
                MemorySegment data = memory.allocate(sampleBytes * batch, 64);
                for (long i = 0; i < data.byteSize(); i += 8) {
                    data.set(ValueLayout.JAVA_LONG, i, (k * data.byteSize() + i) * 0x9E3779B97F4A7C15L);
                }
                long[] full = {batch, shape[0], shape[1], shape[2]};
                loaded.add(Batch.of("x", Tensor.of(DType.FLOAT32, full, data)));
            }
            BatchSource source = BatchSource.fromIterable(loaded, (long) batches * batch);
            try (TensorProducer p = TensorProducer.builder()
                            .directory(tmp.resolve("big"))
                            .source(source)
                            .build()
                            .start();
                    TensorConsumer c = TensorConsumer.connect(tmp.resolve("big"), ConsumerOptions.batchSize(batch))) {
                int k = 0;
                for (Batch b : c) {
                    assertEquals(
                            -1,
                            b.tensor("x")
                                    .data()
                                    .mismatch(loaded.get(k).tensor("x").data()),
                            "batch " + k);
                    k++;
                }
                assertEquals(batches, k);
            }
        }
    }

    @Test
    void aSingleUseIteratorLosesNothingToLayoutDiscovery() {
        Iterator<Batch> once = loader(12, 0).iterator();
        BatchSource source = BatchSource.fromIterators(e -> once, 12);
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("once"))
                        .source(source)
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("once"), ConsumerOptions.batchSize(12))) {
            Batch b = c.iterator().next();
            assertEquals(12, b.size());
            assertEquals(0, b.tensor("y").getLong(0));
        }
    }

    @Test
    void aBatchThatDoesNotFitTheLayoutFailsTheLoaderWithTheReason() throws Exception {
        List<Batch> bad = new ArrayList<>(loader(8, 0));
        bad.set(1, Batch.of("x", Tensor.ofFloats(new float[12], 4, 3), "y", Tensor.ofLongs(new long[4], 4)));
        ProvokedFailureLog.expect("producer 'bad' failed", () -> {
            try (TensorProducer p = TensorProducer.builder()
                            .directory(tmp.resolve("bad"))
                            .source(BatchSource.fromIterable(bad, 8))
                            .build()
                            .start();
                    TensorConsumer c = TensorConsumer.connect(tmp.resolve("bad"), ConsumerOptions.batchSize(4))) {
                ProducerFailedException e = assertThrows(ProducerFailedException.class, () -> {
                    for (Batch b : c) {
                        b.size();
                    }
                });
                assertTrue(
                        e.getMessage().contains("tensor 'x'") && e.getMessage().contains("per sample"), e.getMessage());
            }
        });
    }

    @Test
    void claimsFilledOutOfOrderArePublishedInClaimOrder() {
        BatchLayout layout = new BatchLayout(List.of(TensorSpec.of("v", DType.INT64)), 3);
        BatchSource source = new BatchSource() {
            @Override
            public BatchLayout layout() {
                return layout;
            }

            @Override
            public long samplesPerEpoch() {
                return 12;
            }

            @Override
            public void emitEpoch(long epoch, BatchSink sink) {
                for (int pair = 0; pair < 2; pair++) {
                    SlotWriter first = sink.claim();
                    SlotWriter second = sink.claim();
                    for (int i = 0; i < 3; i++) {
                        first.tensor("v").setAtIndex(ValueLayout.JAVA_LONG, i, pair * 6 + i);
                        second.tensor(0).setAtIndex(ValueLayout.JAVA_LONG, i, pair * 6 + 3 + i);
                    }
                    second.publish(3); // published only once `first` is
                    first.publish(3);
                }
            }
        };
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("claims"))
                        .source(source)
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("claims"), ConsumerOptions.batchSize(12))) {
            Batch b = c.iterator().next();
            assertArrayEquals(
                    new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
                    b.tensor("v").toLongArray());
        }
    }

    @Test
    void aShortBatchBeforeTheEndOfAnEpochIsALoaderError() throws Exception {
        List<Batch> batches = List.of(loader(3, 0).getFirst(), loader(4, 0).getFirst());
        ProvokedFailureLog.expect("producer 'short' failed", () -> {
            try (TensorProducer p = TensorProducer.builder()
                            .directory(tmp.resolve("short"))
                            .source(BatchSource.fromIterators(
                                    e -> List.of(
                                                    loader(4, 0).getFirst(),
                                                    Batch.of(
                                                            "x",
                                                            Tensor.ofFloats(new float[4], 2, 2),
                                                            "y",
                                                            Tensor.ofLongs(new long[2], 2)),
                                                    loader(4, 0).getFirst())
                                            .iterator(),
                                    10))
                            .build()
                            .start();
                    TensorConsumer c = TensorConsumer.connect(tmp.resolve("short"), ConsumerOptions.batchSize(4))) {
                ProducerFailedException e = assertThrows(ProducerFailedException.class, () -> {
                    for (Batch b : c) {
                        b.size();
                    }
                });
                assertTrue(e.getMessage().contains("only an epoch's last batch may hold fewer"), e.getMessage());
                assertEquals(2, batches.size());
            }
        });
    }
}
