package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Consumers that join a running producer at random times, with different batch sizes, some leaving early: with a
 * source that loads by index every epoch of every consumer is one pass over the data set, and all consumers saw the
 * same sample at every stream position they share; with a plain source the late joiners roll and say so.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LateJoinTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=997,shape=4,dtype=float32,seed=21");
    private static final int[] BATCH_SIZES = {16, 1, 7, 33, 50, 16, 24};

    @TempDir
    Path tmp;

    /** What one consumer saw: its start, its epochs' counts, and the ids at every stream position. */
    private record Seen(
            StartMode start, long startSample, List<SyntheticVerifier.EpochCounts> epochs, Map<Long, Long> idAt) {}

    @Test
    void everyEpochOfEveryConsumerIsOnePassWhereverItJoinedAndAllSawOneStream() throws Exception {
        List<Seen> seen = joinAtRandomTimes(new SyntheticSource(SPEC, 16), 0x1A7EL);
        Map<Long, Long> stream = new HashMap<>();
        int midEpoch = 0;
        for (Seen s : seen) {
            assertEquals(s.startSample() == 0 ? StartMode.EPOCH_START : StartMode.EXACT, s.start(), s.toString());
            midEpoch += s.startSample() == 0 ? 0 : 1;
            for (SyntheticVerifier.EpochCounts c : s.epochs()) {
                assertTrue(c.exact(SPEC.samples()), "joined at sample " + s.startSample() + ": " + c);
            }
            s.idAt().forEach((pos, id) -> {
                Long other = stream.putIfAbsent(pos, id);
                assertTrue(other == null || other.equals(id), "two consumers saw different samples at position " + pos);
            });
        }
        assertTrue(midEpoch >= 3, "too few consumers joined mid-epoch to test anything: " + midEpoch);
        int[] first = SPEC.order(0);
        for (int i = 0; i < first.length; i++) {
            // No consumer had joined mid-epoch when epoch 0 was drawn: it is the seeded order.
            assertEquals(first[i], stream.get((long) i), "epoch 0 is the seeded order at " + i);
        }
    }

    @Test
    void aPlainSourceLetsLateJoinersRollAndSaysSo() throws Exception {
        BatchSource plain = SyntheticSource.seeded(SPEC, 16, Duration.ZERO);
        assertNull(plain.byIndex(), "the seeded order is the source's own");
        List<Seen> seen = joinAtRandomTimes(plain, 0x1A7EL);
        long duplicates = 0;
        for (Seen s : seen) {
            assertEquals(s.startSample() == 0 ? StartMode.EPOCH_START : StartMode.ROLLING, s.start(), s.toString());
            if (s.start() == StartMode.ROLLING) {
                duplicates += s.epochs().getFirst().duplicates();
            }
        }
        assertTrue(duplicates > 0, "a rolling epoch straddles two shuffles, so it repeats samples");
    }

    /**
     * A producer serving {@code source} without end (rubber band 0, so a late joiner cannot replay the epoch's
     * start), a first consumer from the start, then one consumer after another at random moments, each with its own
     * batch size, reading one to three epochs at about a millisecond per 16 samples.
     */
    private List<Seen> joinAtRandomTimes(BatchSource source, long seed) throws Exception {
        SplittableRandom r = new SplittableRandom(seed);
        Path dir = tmp.resolve("p" + r.nextInt(1000));
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(source)
                .epochs(0)
                .rubberBand(0)
                .startGrace(Duration.ZERO)
                .build()) {
            List<Future<Seen>> results = new ArrayList<>();
            TensorConsumer pacer = TensorConsumer.connect(dir, ConsumerOptions.batchSize(BATCH_SIZES[0]));
            p.start();
            results.add(pool.submit(() -> read(pacer, 8)));
            for (int i = 1; i < BATCH_SIZES.length; i++) {
                Thread.sleep(r.nextInt(20, 200));
                TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(BATCH_SIZES[i]));
                int epochs = r.nextInt(1, 4);
                results.add(pool.submit(() -> read(c, epochs)));
            }
            List<Seen> seen = new ArrayList<>();
            for (Future<Seen> f : results) {
                seen.add(f.get(60, TimeUnit.SECONDS));
            }
            return seen;
        } finally {
            pool.shutdownNow();
        }
    }

    private static Seen read(TensorConsumer c, int epochs) throws InterruptedException {
        List<SyntheticVerifier.EpochCounts> counts = new ArrayList<>();
        Map<Long, Long> idAt = new HashMap<>();
        try (c;
                SyntheticVerifier v = new SyntheticVerifier(SPEC, false)) {
            for (int e = 0; e < epochs; e++) {
                for (Batch b : c) {
                    long pos = c.streamPosition(b);
                    v.accept(b, pos);
                    Tensor id = b.tensor(SyntheticSource.ID);
                    for (int i = 0; i < b.size(); i++) {
                        idAt.put(pos + i, id.getLong(i));
                    }
                    Thread.sleep(Duration.ofNanos(b.size() * 60_000L));
                }
                counts.add(v.finishEpoch());
            }
            return new Seen(c.startMode(), c.startSample(), counts, idAt);
        }
    }
}
