package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Consumers of different speeds on one producer: the one that holds the others back is moved to a lane of its own, the
 * others read on at their speed, and every epoch of every consumer is still one pass over the data set, with every
 * consumer seeing the same sample at every stream position. The producer runs at most its bound of lanes; a lane ends
 * with its consumer and removes its arena.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LaneTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=1500,shape=4,dtype=float32,seed=40");
    private static final int EPOCHS = 4;

    @TempDir
    Path tmp;

    /** One consumer's reading: its batch size, step, and what it saw. */
    private record Trial(int batchSize, long stepMicros) {}

    private record Seen(List<SyntheticVerifier.EpochCounts> epochs, long finishedNanos, int lane) {}

    private final Map<Long, Long> stream = new ConcurrentHashMap<>();
    private final AtomicLong slowSamples = new AtomicLong();

    @Test
    void aSlowConsumerMovesToALaneTheOthersReadOnAndEveryEpochIsExact() throws Exception {
        AtomicLong slowWhenFastDone = new AtomicLong();
        List<Seen> seen = run(2, List.of(new Trial(10, 0), new Trial(7, 0), new Trial(10, 5000)), slowWhenFastDone);
        assertEquals(0, seen.get(0).lane(), "a fast consumer stays on the main stream");
        assertEquals(0, seen.get(1).lane(), "a fast consumer stays on the main stream");
        assertEquals(1, seen.get(2).lane(), "the slow consumer reads from lane 1");
        long total = EPOCHS * SPEC.samples();
        assertTrue(
                slowWhenFastDone.get() < 0.8 * total,
                "the fast consumers finished when the slow one had read " + slowWhenFastDone.get() + " of " + total
                        + " samples: they waited for it");
    }

    @Test
    void beyondTheBoundNoOtherLaneStartsAndEveryEpochStaysExact() throws Exception {
        AtomicLong ignored = new AtomicLong();
        List<Seen> seen = run(1, List.of(new Trial(10, 0), new Trial(10, 3000), new Trial(10, 5000)), ignored);
        assertEquals(0, seen.get(0).lane());
        for (Seen s : seen) {
            assertTrue(s.lane() <= 1, "one lane at most: " + seen);
        }
    }

    @Test
    void aSecondLaggardJoinsTheLaneBehindItWhenEveryLaneRuns() throws Exception {
        // the slowest holds the main stream back first and founds lane 1; the middle one, faster than the lane, holds
        // the fast one back next and, no lane being free, joins lane 1 once the lane is behind it
        List<Seen> seen = run(1, List.of(new Trial(10, 0), new Trial(10, 2000), new Trial(10, 6000)), new AtomicLong());
        assertEquals(0, seen.get(0).lane(), "the fast consumer stays on the main stream");
        assertEquals(1, seen.get(2).lane(), "the slowest founds lane 1");
        assertEquals(1, seen.get(1).lane(), "the middle one joins it: " + seen);
        assertTrue(
                seen.get(0).finishedNanos() < seen.get(1).finishedNanos(),
                "the fast consumer read on at its pace and finished first");
    }

    @Test
    void withoutLanesEveryoneReadsAtTheSlowestPace() throws Exception {
        AtomicLong slowWhenFastDone = new AtomicLong();
        List<Seen> seen = run(0, List.of(new Trial(10, 0), new Trial(10, 5000)), slowWhenFastDone);
        assertEquals(0, seen.get(1).lane());
        assertTrue(slowWhenFastDone.get() > 0.8 * EPOCHS * SPEC.samples(), "the fast one waited: " + slowWhenFastDone);
    }

    @Test
    void aSlowJobsRanksMoveToALaneTogetherAndTheirEpochsStayOnePass() throws Exception {
        Path dir = tmp.resolve("job");
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(SPEC, 10))
                .slots(16)
                .epochs(EPOCHS)
                .lanes(1)
                .laneIdleCores(0) // lanes' mechanics, whatever else the machine runs
                .minConsumers(3) // the job's ranks join at the start, as the fast consumer does: whole epochs for all
                .startGrace(Duration.ZERO)
                .build()) {
            TensorConsumer fast = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            List<Future<List<List<Long>>>> ranks = new ArrayList<>();
            List<Integer> lanesSeen = Collections.synchronizedList(new ArrayList<>());
            for (int r = 0; r < 2; r++) {
                int rank = r;
                ranks.add(pool.submit(() -> {
                    try (TensorConsumer c = TensorConsumer.connect(
                            dir, ConsumerOptions.batchSize(10).withRank("slow-job", rank, 2))) {
                        List<List<Long>> epochs = new ArrayList<>();
                        for (int e = 0; e < EPOCHS; e++) {
                            List<Long> ids = new ArrayList<>();
                            for (Batch b : c) {
                                try (b) {
                                    Tensor id = b.tensor(SyntheticSource.ID);
                                    for (int i = 0; i < b.size(); i++) {
                                        ids.add(id.getLong(i));
                                    }
                                }
                                Thread.sleep(5);
                                lanesSeen.add(laneOf(p, c));
                            }
                            epochs.add(ids);
                        }
                        return epochs;
                    }
                }));
            }
            p.start();
            Future<Seen> f = pool.submit(() -> readEpochs(fast, EPOCHS, 0, null, p));
            Seen fastSeen = f.get(60, TimeUnit.SECONDS);
            List<List<Long>> rank0 = ranks.get(0).get(60, TimeUnit.SECONDS);
            List<List<Long>> rank1 = ranks.get(1).get(60, TimeUnit.SECONDS);
            assertTrue(lanesSeen.contains(1), "the job's ranks read from lane 1: " + lanesSeen);
            assertTrue(fastSeen.finishedNanos() > 0);
            for (int e = 0; e < EPOCHS; e++) {
                List<Long> all = new ArrayList<>(rank0.get(e));
                all.addAll(rank1.get(e));
                assertEquals(
                        SPEC.samples(),
                        all.size(),
                        "epoch " + e + ": the ranks' shares hold every sample once: "
                                + rank0.get(e).size() + " + " + rank1.get(e).size() + "; lanes " + lanesSeen);
                assertEquals(SPEC.samples(), new HashSet<>(all).size(), "epoch " + e + ": disjoint shares");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aLaggardThatCatchesUpRejoinsTheMainStreamAndStaysExact() throws Exception {
        Path dir = tmp.resolve("rejoin");
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = producer(dir, 1)) {
            TensorConsumer fast = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            TensorConsumer slow = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            p.start();
            // the fast one reads all but the last epoch and leaves: the main stream then waits, and the lane catches up
            Future<Seen> f = pool.submit(() -> readEpochs(fast, EPOCHS - 1, 0, null, p));
            List<Integer> lanes = new ArrayList<>();
            Seen s = readEpochs(slow, EPOCHS, 5000, lanes, p);
            assertTrue(lanes.contains(1), "the slow consumer read from lane 1: " + lanes);
            assertEquals(0, lanes.getLast(), "and back from the main stream at the end: " + lanes);
            assertEquals(EPOCHS, s.epochs().size());
            f.get(60, TimeUnit.SECONDS);
            assertEquals(0, lanes(dir), "the lane ended");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aConsumerWhoseLanesArenaCannotBeMadeKeepsTheMainStreamAndSetsThePace() throws Exception {
        Path dir = tmp.resolve("unmade");
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = producer(dir, 1)) {
            // where lane 1's arena would go stands a directory with a file in it: the arena cannot be made there
            Files.writeString(Files.createDirectories(dir.resolve("lane-1")).resolve("in-the-way"), "x");
            TensorConsumer fast = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            TensorConsumer slow = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            ProvokedFailureLog.expect("could not make the arena of lane 1 (", () -> {
                long t0 = System.nanoTime();
                p.start();
                Future<Seen> f = pool.submit(() -> readEpochs(fast, EPOCHS, 0, null, p));
                List<Integer> lanes = new ArrayList<>();
                Seen slowSeen = readEpochs(slow, EPOCHS, 5000, lanes, p); // each epoch checked exact, no failure
                Seen fastSeen = f.get(60, TimeUnit.SECONDS);
                assertEquals(List.of(0), lanes, "the slow consumer read the main stream throughout");
                assertTrue(
                        fastSeen.finishedNanos() - t0 > 0.7 * (slowSeen.finishedNanos() - t0),
                        "the fast consumer read at the slow one's pace, as without lanes");
            });
            Files.delete(dir.resolve("lane-1/in-the-way"));
            Files.delete(dir.resolve("lane-1"));
        } finally {
            pool.shutdownNow();
        }
    }

    /** Reads {@code epochs} epochs, checking each; records the lane it reads from after each batch into {@code lanes}. */
    private Seen readEpochs(TensorConsumer c, int epochs, long stepMicros, List<Integer> lanes, TensorProducer p)
            throws InterruptedException {
        List<SyntheticVerifier.EpochCounts> counts = new ArrayList<>();
        try (c;
                SyntheticVerifier v = new SyntheticVerifier(SPEC, false)) {
            for (int e = 0; e < epochs; e++) {
                for (Batch b : c) {
                    try (b) {
                        v.accept(b, c.streamPosition(b));
                    }
                    Thread.sleep(Duration.ofNanos(stepMicros * 1000));
                    if (lanes != null) {
                        int now = laneOf(p, c);
                        if (lanes.isEmpty() || lanes.getLast() != now) {
                            lanes.add(now);
                        }
                    }
                }
                SyntheticVerifier.EpochCounts counted = v.finishEpoch();
                assertTrue(counted.exact(SPEC.samples()), counted.toString());
                counts.add(counted);
            }
            return new Seen(counts, System.nanoTime(), 0);
        }
    }

    @Test
    void aLateJoinerMovedToALaneStillReadsExactEpochsFromWhereItJoined() throws Exception {
        Path dir = tmp.resolve("late");
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = producer(dir, 1)) {
            TensorConsumer fast = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            p.start();
            Future<Seen> f = pool.submit(() -> readEpochs(fast, EPOCHS, 0, null, p));
            while (p.status().sample() < 200 && p.status().epoch() == 0) {
                Thread.sleep(1);
            }
            TensorConsumer late = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            assertEquals(StartMode.EXACT, late.startMode(), "it joined mid-epoch");
            List<Integer> lanes = new ArrayList<>();
            Seen s = readEpochs(late, 2, 5000, lanes, p); // each of its epochs one pass from where it joined
            assertTrue(lanes.contains(1), "the late joiner read from lane 1: " + lanes);
            assertEquals(2, s.epochs().size());
            f.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aConsumerThatLeavesItsLaneFreesItAndItsArenaGoes() throws Exception {
        Path dir = tmp.resolve("leave");
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = producer(dir, 1)) {
            TensorConsumer fast = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            TensorConsumer slow = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
            p.start();
            Future<?> f = pool.submit(() -> read(fast, EPOCHS, 0, null));
            // the slow one reads until its lane serves it, then leaves in the middle of an epoch
            int lane = 0;
            try (slow) {
                // epoch after epoch until it is moved, slow enough to be however loaded the machine is (in one epoch
                // at 5 ms a batch it was not always)
                for (int e = 0; e < EPOCHS - 1 && lane == 0; e++) {
                    for (Batch b : slow) {
                        try (b) {
                            Thread.sleep(15);
                        }
                        lane = laneOf(p, slow);
                        if (lane > 0) {
                            break;
                        }
                    }
                }
            }
            assertEquals(1, lane, "the slow consumer was moved to lane 1");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (lanes(dir) > 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(0, lanes(dir), "the lane's arena is removed once its consumer left");
            f.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
    }

    private static long lanes(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(f -> f.getFileName().toString().startsWith("lane-")).count();
        }
    }

    private static TensorProducer producer(Path dir, int lanes) {
        return TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(SPEC, 10))
                .slots(16)
                .epochs(EPOCHS)
                .lanes(lanes)
                .laneIdleCores(0) // lanes' mechanics, whatever else the machine runs
                .startGrace(Duration.ZERO)
                .build();
    }

    /** Runs {@code trials} (the last one the slowest) on one producer with {@code lanes} lanes; what each saw. */
    private List<Seen> run(int lanes, List<Trial> trials, AtomicLong slowWhenFastDone) throws Exception {
        Path dir = tmp.resolve("p" + lanes + "-" + trials.size());
        ExecutorService pool = Executors.newCachedThreadPool();
        try (TensorProducer p = producer(dir, lanes)) {
            List<TensorConsumer> consumers = new ArrayList<>();
            for (Trial t : trials) {
                consumers.add(TensorConsumer.connect(dir, ConsumerOptions.batchSize(t.batchSize())));
            }
            p.start();
            List<Future<Seen>> results = new ArrayList<>();
            AtomicInteger fastLeft = new AtomicInteger(trials.size() - 1);
            for (int i = 0; i < trials.size(); i++) {
                TensorConsumer c = consumers.get(i);
                long step = trials.get(i).stepMicros();
                boolean slowest = i == trials.size() - 1;
                results.add(pool.submit(() -> {
                    Seen s = read(c, step, slowest ? 0 : 1, p);
                    if (!slowest && fastLeft.decrementAndGet() == 0) {
                        slowWhenFastDone.set(slowSamples.get());
                    }
                    return s;
                }));
            }
            List<Seen> seen = new ArrayList<>();
            for (Future<Seen> f : results) {
                Seen s = f.get(60, TimeUnit.SECONDS);
                for (SyntheticVerifier.EpochCounts c : s.epochs()) {
                    assertTrue(c.exact(SPEC.samples()), c.toString());
                }
                assertEquals(EPOCHS, s.epochs().size());
                seen.add(s);
            }
            return seen;
        } finally {
            pool.shutdownNow();
        }
    }

    private Seen read(TensorConsumer c, long stepMicros, int fast, TensorProducer p) throws InterruptedException {
        List<SyntheticVerifier.EpochCounts> counts = new ArrayList<>();
        int lane = 0;
        try (c;
                SyntheticVerifier v = new SyntheticVerifier(SPEC, false)) {
            for (int e = 0; e < EPOCHS; e++) {
                for (Batch b : c) {
                    try (b) {
                        long pos = c.streamPosition(b);
                        v.accept(b, pos);
                        Tensor id = b.tensor(SyntheticSource.ID);
                        for (int i = 0; i < b.size(); i++) {
                            Long other = stream.putIfAbsent(pos + i, id.getLong(i));
                            assertTrue(other == null || other == id.getLong(i), "two samples at position " + (pos + i));
                        }
                        if (fast == 0) {
                            slowSamples.addAndGet(b.size());
                        }
                    }
                    if (stepMicros > 0) {
                        Thread.sleep(Duration.ofNanos(stepMicros * 1000));
                    }
                    if (p != null && lane == 0) {
                        lane = laneOf(p, c);
                    }
                }
                counts.add(v.finishEpoch());
            }
            return new Seen(counts, System.nanoTime(), lane);
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
