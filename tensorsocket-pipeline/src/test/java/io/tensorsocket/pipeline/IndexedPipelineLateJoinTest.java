package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.Iterator;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An IDX data set served by a producer with parallel workers: a consumer that joins mid-epoch starts exact and
 * each of its epochs holds every image once (the images carry their index in their first two pixels).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IndexedPipelineLateJoinTest {
    private static final int N = 600;

    @TempDir
    Path dir;

    @Test
    void aConsumerJoiningAnIdxProducerMidEpochGetsEveryImageOncePerEpoch() throws Exception {
        byte[] px = new byte[N * 6];
        byte[] labels = new byte[N];
        for (int i = 0; i < N; i++) {
            px[i * 6] = (byte) (i >> 8);
            px[i * 6 + 1] = (byte) i;
            labels[i] = (byte) (i % 10);
        }
        IdxTest.writeIdx(dir.resolve("train-images-idx3-ubyte"), px, false, N, 3, 2);
        IdxTest.writeIdx(dir.resolve("train-labels-idx1-ubyte"), labels, false, N);
        IdxDataset data = IdxDataset.open(dir, "train");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (IdxSource source = IdxSource.builder(data)
                        .uint8()
                        .batchSize(16)
                        .workers(2)
                        .seed(9)
                        .build();
                TensorProducer p = TensorProducer.builder()
                        .directory(dir.resolve("p"))
                        .source(source)
                        .epochs(5)
                        .rubberBand(0)
                        .slots(8)
                        .startGrace(Duration.ZERO)
                        .build()
                        .start();
                TensorConsumer first = TensorConsumer.connect(p.directory(), ConsumerOptions.batchSize(16))) {
            Iterator<Batch> it = first.iterator();
            for (int i = 0; i < 6; i++) {
                it.next().close();
            }
            // The producer now waits for a slot in the middle of epoch 0 (8 slots, the first consumer at sample 96):
            // the late one joins there, then the first goes on.
            TensorConsumer late = TensorConsumer.connect(p.directory(), ConsumerOptions.batchSize(23));
            Future<?> rest = pool.submit(() -> {
                while (it.hasNext()) {
                    it.next().close();
                }
                for (int e = 1; e < 5; e++) {
                    for (Batch b : first) {
                        b.close();
                    }
                }
                return null;
            });
            try (late) {
                assertEquals(StartMode.EXACT, late.startMode(), "joined at sample " + late.startSample());
                for (int e = 0; e < 3; e++) {
                    BitSet seen = new BitSet(N);
                    int count = 0;
                    for (Batch b : late) {
                        MemorySegment images = b.tensor("image").data();
                        for (int i = 0; i < b.size(); i++) {
                            int id = (Byte.toUnsignedInt(images.get(ValueLayout.JAVA_BYTE, i * 6L)) << 8)
                                    | Byte.toUnsignedInt(images.get(ValueLayout.JAVA_BYTE, i * 6L + 1));
                            seen.set(id);
                            count++;
                        }
                    }
                    assertEquals(N, count, "epoch " + e);
                    assertEquals(
                            N, seen.cardinality(), "epoch " + e + " of the consumer that joined mid-epoch is one pass");
                }
            }
            rest.get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }
}
