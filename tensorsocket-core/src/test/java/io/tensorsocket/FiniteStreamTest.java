package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stream of a fixed number of epochs ends whole for every consumer: one that joined mid-epoch gets every epoch that
 * began for it inside the stream, its last one completed by index after the stream's end (from the main stream, or
 * from its lane), then the ordinary end; iterating on says how many epochs it got. Where the source fixes its order,
 * the last epoch of a late joiner ends short and says so, never silently.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class FiniteStreamTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=500,shape=4,dtype=float32,seed=58");
    private static final int EPOCHS = 3;
    private static final int[] BATCH_SIZES = {16, 7, 33, 50, 10};

    @TempDir
    Path tmp;

    /** What one consumer saw: its start, its epochs' counts, what iterating past its end said, its last lane. */
    private record Seen(
            long startEpoch, long startSample, List<SyntheticVerifier.EpochCounts> epochs, String end, int lane) {}

    @Test
    void lateJoinersOfAFiniteStreamGetEveryEpochLeftWholeThenTheEnd() throws Exception {
        assertWholeAndOwed(joinAtRandomTimes(0, 0x58L));
    }

    @Test
    void aLaggardInALaneGetsItsTailFromItsLane() throws Exception {
        // the slow one (a step per batch) falls behind and is moved to lane 1, whose stream completes its last epoch
        List<Seen> seen = joinAtRandomTimes(1, 0x5AL);
        assertWholeAndOwed(seen);
        assertEquals(1, seen.get(1).lane(), "the slow consumer read its last batches from lane 1: " + seen);
    }

    private static void assertWholeAndOwed(List<Seen> seen) {
        int midEpoch = 0;
        for (Seen s : seen) {
            long start = s.startEpoch() * SPEC.samples() + s.startSample();
            long owed = (EPOCHS * SPEC.samples() - start + SPEC.samples() - 1) / SPEC.samples();
            assertEquals(owed, s.epochs().size(), "joined at " + s.startEpoch() + "/" + s.startSample() + ": " + s);
            for (SyntheticVerifier.EpochCounts c : s.epochs()) {
                assertTrue(c.exact(SPEC.samples()), "joined at sample " + s.startSample() + ": " + c);
            }
            assertTrue(s.end().contains("got " + owed + " epoch"), "iterating on names the epochs it got: " + s.end());
            midEpoch += s.startSample() == 0 ? 0 : 1;
        }
        assertTrue(midEpoch >= 2, "too few consumers joined mid-epoch to test anything: " + seen);
    }

    @Test
    void aLateJoinerOfASourceThatFixesItsOrderIsToldItsLastEpochIsShort() throws Exception {
        Path dir = tmp.resolve("plain");
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(SyntheticSource.seeded(SPEC, 10, Duration.ofMillis(6)))
                .epochs(2)
                .rubberBand(0)
                .startGrace(Duration.ZERO)
                .build()) {
            TensorConsumer first = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            p.start();
            Thread.ofPlatform().start(() -> {
                try (first) {
                    while (!first.isEndOfStream()) {
                        for (Batch b : first) {
                            b.close();
                        }
                    }
                }
            });
            Thread.sleep(120);
            try (TensorConsumer late = TensorConsumer.connect(dir, ConsumerOptions.batchSize(7))) {
                assertEquals(StartMode.ROLLING, late.startMode());
                assertTrue(
                        late.startSample() > 0 && late.startEpoch() == 0, "joined mid-epoch 0: " + late.startSample());
                long got = 0;
                for (Batch b : late) {
                    got += b.size();
                }
                assertEquals(SPEC.samples(), got, "its first epoch is whole");
                long handed = 0;
                EpochIncompleteException e = null;
                try {
                    for (Batch b : late) {
                        handed += b.size();
                    }
                } catch (EpochIncompleteException thrown) {
                    e = thrown;
                }
                assertNotNull(e, "the second epoch ran past the stream's end and must say so");
                assertEquals(late.startSample(), e.missing(), e.getMessage());
                assertEquals(SPEC.samples() - late.startSample(), handed, "every sample that came was handed out");
                assertTrue(e.getMessage().contains("short of this consumer's epoch 1"), e.getMessage());
                assertTrue(late.isEndOfStream());
            }
        }
    }

    /**
     * A producer of {@link #EPOCHS} epochs (no rubber band, so a late joiner cannot replay the epoch's start), a
     * first consumer from the start, and one after another at random moments, each with its own batch size, reading
     * until its stream ends; with {@code lanes}, the second one is slow and moves to a lane.
     */
    private List<Seen> joinAtRandomTimes(int lanes, long seed) throws Exception {
        SplittableRandom r = new SplittableRandom(seed);
        Path dir = tmp.resolve("p" + r.nextInt(1000));
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(SPEC, 10, Duration.ofMillis(8)))
                .epochs(EPOCHS)
                .slots(16)
                .rubberBand(0)
                .lanes(lanes)
                .laneIdleCores(0)
                .startGrace(Duration.ZERO)
                .build()) {
            List<Future<Seen>> results = new ArrayList<>();
            TensorConsumer pacer = TensorConsumer.connect(dir, ConsumerOptions.batchSize(BATCH_SIZES[0]));
            p.start();
            results.add(pool.submit(() -> read(pacer, 0, p)));
            for (int i = 1; i < BATCH_SIZES.length; i++) {
                Thread.sleep(r.nextInt(30, 220));
                TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(BATCH_SIZES[i]));
                long step = lanes > 0 && i == 1 ? 15 : 0;
                results.add(pool.submit(() -> read(c, step, p)));
            }
            List<Seen> seen = new ArrayList<>();
            for (Future<Seen> f : results) {
                seen.add(f.get(60, TimeUnit.SECONDS));
            }
            return seen;
        } catch (ProducerNotFoundException e) {
            throw new AssertionError("a consumer came after the stream was published: make the loader slower", e);
        } finally {
            pool.shutdownNow();
        }
    }

    private static Seen read(TensorConsumer c, long stepMillis, TensorProducer p) throws InterruptedException {
        List<SyntheticVerifier.EpochCounts> counts = new ArrayList<>();
        int lane = 0;
        try (c;
                SyntheticVerifier v = new SyntheticVerifier(SPEC, false)) {
            while (!c.isEndOfStream()) {
                for (Batch b : c) {
                    v.accept(b, c.streamPosition(b));
                    b.close();
                    if (stepMillis > 0) {
                        Thread.sleep(stepMillis);
                        lane = Math.max(lane, laneOf(p, c));
                    }
                }
                counts.add(v.finishEpoch());
            }
            String end;
            try {
                end = "no error, and " + (c.iterator().hasNext() ? "a batch" : "an empty epoch");
            } catch (ProducerGoneException e) {
                end = e.getMessage();
            }
            return new Seen(c.startEpoch(), c.startSample(), counts, end, lane);
        }
    }

    private static int laneOf(TensorProducer p, TensorConsumer c) {
        for (ProducerStatus.Consumer s : p.status().consumers()) {
            if (s.id() == c.consumerId()) {
                return s.lane();
            }
        }
        return 0;
    }
}
