package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The contract exercised with producer and consumers in one JVM (fast; the process tests repeat it across JVMs). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InProcessContractTest {
    @TempDir
    Path tmp;

    @Test
    void everyBatchSizeGetsEverySampleOnceOverTwoEpochs() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=1003,shape=3x4x4,dtype=float32,seed=7");
        Path dir = tmp.resolve("p");
        int[] sizes = {16, 8, 10, 33, 1};
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(spec, 16))
                .epochs(2)
                .build()) {
            ExecutorService pool = Executors.newFixedThreadPool(sizes.length);
            List<Future<List<SyntheticVerifier.EpochCounts>>> results = new ArrayList<>();
            List<TensorConsumer> consumers = new ArrayList<>();
            for (int b : sizes) {
                consumers.add(TensorConsumer.connect(dir, ConsumerOptions.batchSize(b)));
            }
            p.start();
            for (TensorConsumer c : consumers) {
                results.add(pool.submit((Callable<List<SyntheticVerifier.EpochCounts>>) () -> {
                    List<SyntheticVerifier.EpochCounts> out = new ArrayList<>();
                    try (c;
                            SyntheticVerifier v = new SyntheticVerifier(spec)) {
                        for (int e = 0; e < 2; e++) {
                            long n = 0;
                            for (Batch b : c) {
                                assertEquals(e, b.epoch());
                                assertEquals(n, b.index());
                                v.accept(b, c.streamPosition(b));
                                n++;
                            }
                            assertEquals(c.size(), n);
                            out.add(v.finishEpoch());
                        }
                        assertTrue(c.isEndOfStream());
                    }
                    return out;
                }));
            }
            for (int i = 0; i < sizes.length; i++) {
                List<SyntheticVerifier.EpochCounts> counts = results.get(i).get(50, TimeUnit.SECONDS);
                for (SyntheticVerifier.EpochCounts ec : counts) {
                    assertTrue(ec.exact(1003), "batch size " + sizes[i] + ": " + ec);
                }
            }
            pool.shutdown();
            assertTrue(p.await(Duration.ofSeconds(20)));
        }
    }

    @Test
    void aPreloadedSyntheticSourceServesTheSameSamplesInTheSameOrders() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=301,shape=2x5,dtype=float32,seed=11");
        SyntheticSource preloaded = new SyntheticSource(spec, 32).preload();
        assertEquals(301L * 40, SyntheticSource.preloadBytes(spec));
        assertEquals(new SyntheticSource(spec, 32).description(), preloaded.description());
        for (var source : List.<BatchSource>of(preloaded, preloaded.seeded())) {
            Path dir = tmp.resolve("preloaded-" + source.getClass().getSimpleName());
            try (TensorProducer p = TensorProducer.builder()
                            .directory(dir)
                            .source(source)
                            .epochs(2)
                            .build()
                            .start();
                    TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(20));
                    SyntheticVerifier v = new SyntheticVerifier(spec)) {
                for (int e = 0; e < 2; e++) {
                    for (Batch b : c) {
                        v.accept(b, c.streamPosition(b));
                    }
                    SyntheticVerifier.EpochCounts counts = v.finishEpoch();
                    assertTrue(counts.exact(301), source.description() + ", epoch " + e + ": " + counts);
                }
            }
        }
    }
}
