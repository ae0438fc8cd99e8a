package io.tensorsocket.bench;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchSource;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * What late joiners cost the producer: {@code K} consumers read {@code epochs} epochs each from one producer whose
 * loader spends {@code delay} per batch (standing in for decoding), either all attached before the first batch
 * (aligned) or, after the first, each joining at a random moment of the first epoch. Reports the loader's work per
 * delivered sample (batches the loader produced per consumer batch-sample delivered), the consumers' throughput and
 * how many of their epochs were exact, for the producer-ordered source (exact late joins) and the seeded one
 * (rolling late joins) alike.
 */
public final class LateJoinRun {

    /** One run's figures. */
    public record Result(
            String joins,
            String order,
            int consumers,
            long loaderSamples,
            long deliveredSamples,
            double seconds,
            long exactEpochs,
            long epochs) {
        /** Samples the loader produced per sample a consumer received. */
        public double loaderWorkPerDelivered() {
            return (double) loaderSamples / deliveredSamples;
        }

        /** Samples per second reaching the consumers, all together. */
        public double deliveredPerSecond() {
            return deliveredSamples / seconds;
        }
    }

    private LateJoinRun() {}

    /**
     * Runs {@code consumers} consumers of one producer for {@code epochs} epochs and counts what the loader did.
     *
     * @param randomJoins  false: every consumer attached before the first batch; true: the first one, then each of the
     *                     others at a random moment of the first epoch
     * @param producerOrder true: the producer chooses the order (exact late joins); false: the seeded order (rolling)
     */
    public static Result run(int consumers, int epochs, boolean randomJoins, boolean producerOrder, long seed)
            throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=10000,shape=3x32x32,dtype=float32,seed=3");
        int batch = 64;
        Duration delay = Duration.ofMillis(2);
        BatchSource source =
                producerOrder ? new SyntheticSource(spec, batch, delay) : SyntheticSource.seeded(spec, batch, delay);
        long epochNanos = spec.samples() / batch * delay.toNanos();
        Path dir = Files.createTempDirectory("tensorsocket-latejoin");
        SplittableRandom r = new SplittableRandom(seed);
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir.resolve("p"))
                .source(source)
                .epochs(0)
                .startGrace(Duration.ZERO)
                .minConsumers(randomJoins ? 1 : consumers)
                .build()) {
            List<TensorConsumer> early = new ArrayList<>();
            for (int i = 0; i < (randomJoins ? 1 : consumers); i++) {
                early.add(TensorConsumer.connect(p.directory(), ConsumerOptions.batchSize(batch)));
            }
            long t0 = System.nanoTime();
            p.start();
            List<Future<long[]>> reads = new ArrayList<>();
            for (TensorConsumer c : early) {
                reads.add(pool.submit(() -> read(c, epochs, spec)));
            }
            if (randomJoins) {
                long[] at = r.longs(consumers - 1, 0, epochNanos).sorted().toArray();
                for (long when : at) {
                    long wait = t0 + when - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(Duration.ofNanos(wait));
                    }
                    TensorConsumer c = TensorConsumer.connect(p.directory(), ConsumerOptions.batchSize(batch));
                    reads.add(pool.submit(() -> read(c, epochs, spec)));
                }
            }
            long delivered = 0;
            long exact = 0;
            for (Future<long[]> f : reads) {
                long[] got = f.get(10, TimeUnit.MINUTES);
                delivered += got[0];
                exact += got[1];
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            long loader = p.status().samplesPublished();
            return new Result(
                    randomJoins ? "random" : "aligned",
                    producerOrder ? "producer" : "seeded",
                    consumers,
                    loader,
                    delivered,
                    seconds,
                    exact,
                    (long) consumers * epochs);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Reads {@code epochs} epochs, checking only the ids (the bytes are the fan-out tests' business, and checking
     * them would make this a benchmark of the checker); returns the samples received and how many epochs were one
     * pass each.
     */
    private static long[] read(TensorConsumer c, int epochs, SyntheticSpec spec) {
        long samples = 0;
        long exact = 0;
        try (c) {
            for (int e = 0; e < epochs; e++) {
                BitSet seen = new BitSet((int) spec.samples());
                long n = 0;
                for (Batch b : c) {
                    Tensor id = b.tensor(SyntheticSource.ID);
                    for (int i = 0; i < b.size(); i++) {
                        seen.set((int) id.getLong(i));
                    }
                    n += b.size();
                }
                samples += n;
                exact += n == spec.samples() && seen.cardinality() == n ? 1 : 0;
            }
            return new long[] {samples, exact};
        }
    }
}
