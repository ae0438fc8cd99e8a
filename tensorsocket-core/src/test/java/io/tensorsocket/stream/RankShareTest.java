package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The ranks of a job over one stream: every epoch each rank takes an equal share, together every sample once (the
 * epoch's last samples twice where the world size does not divide it, none of the tail with drop-last), in the
 * producer's order; each rank releases every batch once, in order, and ranks that take turns one batch each (as
 * DistributedDataParallel's steps make them) never deadlock an arena of the slots their batch size is said to need.
 */
class RankShareTest {

    @Test
    void dealsAsTheJavadocDiagramSays() {
        assertEquals(List.of(2L, 6L, 8L), offsets(new RankShare(2, 4), 10, false));
        assertEquals(List.of(3L, 7L, 9L), offsets(new RankShare(3, 4), 10, false));
        assertEquals(List.of(0L, 4L, 8L), offsets(new RankShare(0, 4), 10, false));
        assertEquals(List.of(1L, 5L), offsets(new RankShare(1, 4), 10, true));
        assertEquals(10, RankShare.ALL.count(10, false));
    }

    @Test
    void refusesARankOutsideItsWorld() {
        assertThrows(IllegalArgumentException.class, () -> new RankShare(4, 4));
        assertThrows(IllegalArgumentException.class, () -> new RankShare(-1, 4));
        assertThrows(IllegalArgumentException.class, () -> new RankShare(0, 0));
    }

    @Test
    void ranksTakingTurnsCoverEveryEpochOnceInEqualSharesAndReleaseEverythingOnce() {
        long seed = System.nanoTime();
        SplittableRandom r = new SplittableRandom(seed);
        for (int trial = 0; trial < 300; trial++) {
            int n = r.nextInt(1, 120);
            int producerBatch = r.nextInt(1, 12);
            int world = r.nextInt(1, 7);
            boolean dropLast = r.nextBoolean();
            if (dropLast && n < world) {
                n = world;
            }
            int[] batch = new int[world];
            for (int k = 0; k < world; k++) {
                batch[k] = r.nextInt(1, 20);
            }
            // Half the jobs join mid-epoch (exact, as a late job does), at a batch boundary of the producer's.
            StreamGeometry g = new StreamGeometry(n, producerBatch);
            long startSample = r.nextBoolean() ? 0 : r.nextLong(g.batchesPerEpoch()) * producerBatch;
            run(seed, trial, g, world, batch, dropLast, r.nextInt(1, 4), startSample);
        }
    }

    private static void run(
            long seed,
            int trial,
            StreamGeometry g,
            int world,
            int[] batch,
            boolean dropLast,
            int epochs,
            long startSample) {
        String what = "seed " + seed + " trial " + trial + ": n=" + g.samplesPerEpoch() + " B=" + g.producerBatchSize()
                + " w=" + world + " b=" + Arrays.toString(batch) + " dropLast=" + dropLast + " start=" + startSample;
        int slots = 1;
        for (int k = 0; k < world; k++) {
            slots = Math.max(slots, g.slotsNeeded((int) new RankShare(k, world).span(batch[k])));
        }
        List<ConsumerStream> ranks = new ArrayList<>();
        for (int k = 0; k < world; k++) {
            ranks.add(new ConsumerStream(g, slots, batch[k], dropLast, 0, startSample, new RankShare(k, world)));
        }
        ProducerStream producer = new ProducerStream(g);
        Map<Long, Integer> holders = new HashMap<>();
        List<List<Long>> released = new ArrayList<>();
        List<Map<Long, List<Long>>> seen = new ArrayList<>(); // rank -> epoch -> stream positions
        for (int k = 0; k < world; k++) {
            released.add(new ArrayList<>());
            seen.add(new HashMap<>());
            ranks.get(k).beginEpoch();
        }
        long seq = 0;
        long total = startSample + epochs * g.samplesPerEpoch();
        long published = 0;
        int[] epochOf = new int[world];
        boolean[] done = new boolean[world];
        int idle = 0;
        while (!allDone(done)) {
            boolean progress = false;
            // The producer publishes while the slot of its next batch is free.
            while (published < total && holders.getOrDefault(seq - slots, 0) == 0) {
                holders.remove(seq - slots);
                int samples = (int) Math.min(g.producerBatchSize(), g.samplesPerEpoch() - producer.nextSample());
                BatchPosition p = producer.publish(seq, samples);
                if (published >= startSample) { // the job joined here: it is handed this batch and all after it
                    holders.put(seq, world);
                    for (ConsumerStream c : ranks) {
                        c.accept(p, (int) (seq % slots));
                    }
                }
                published += samples;
                if (producer.nextSample() == g.samplesPerEpoch()) {
                    producer.endEpoch(producer.nextEpoch());
                }
                seq++;
                progress = true;
            }
            if (published == total) {
                ranks.forEach(ConsumerStream::endOfStream);
            }
            // Each rank takes one batch (a step), then releases what it can.
            for (int k = 0; k < world; k++) {
                ConsumerStream c = ranks.get(k);
                int s = done[k] ? -2 : c.nextBatch();
                if (done[k]) {
                    c.skipArrived(total); // a rank that is done leaves: it holds nothing more
                } else if (s > 0) {
                    ConsumerStream.BatchPlan plan = c.take(s);
                    List<Long> positions = seen.get(k).computeIfAbsent(plan.epoch(), e -> new ArrayList<>());
                    for (int i = 0; i < s; i++) {
                        positions.add(c.streamPosition(plan.epoch(), plan.sampleStart() + i));
                    }
                    for (ConsumerStream.Piece piece : plan.pieces()) {
                        c.unpin(piece.seq());
                    }
                    progress = true;
                } else if (s == 0) {
                    epochOf[k]++;
                    if (epochOf[k] == epochs) {
                        done[k] = true;
                    } else if (c.skipArrived(c.epochEnd())) {
                        c.beginEpoch();
                    } else {
                        epochOf[k]--; // the rest of the epoch must arrive before the next one begins
                    }
                    progress = true;
                }
                for (long q = c.pollReleasable(); q >= 0; q = c.pollReleasable()) {
                    released.get(k).add(q);
                    holders.merge(q, -1, Integer::sum);
                    progress = true;
                }
            }
            idle = progress ? 0 : idle + 1;
            if (idle > 2) {
                StringBuilder state = new StringBuilder();
                for (ConsumerStream c : ranks) {
                    state.append(" [epoch ")
                            .append(c.epoch())
                            .append(" at ")
                            .append(c.position())
                            .append(", received ")
                            .append(c.receivedUpTo())
                            .append(", next batch ")
                            .append(c.nextBatch())
                            .append(']');
                }
                fail(what + ": the ranks and the producer deadlocked at seq " + seq + " (slots " + slots + "):"
                        + state);
            }
        }
        long n = g.samplesPerEpoch();
        for (int e = 0; e < epochs; e++) {
            int[] times = new int[(int) n];
            for (int k = 0; k < world; k++) {
                List<Long> positions = seen.get(k).getOrDefault((long) e, List.of());
                RankShare share = new RankShare(k, world);
                assertEquals(
                        share.count(n, dropLast) / batch[k] * batch[k]
                                + (dropLast ? 0 : share.count(n, false) % batch[k]),
                        positions.size(),
                        what + ": rank " + k + " epoch " + e);
                for (int i = 0; i < positions.size(); i++) {
                    long offset = positions.get(i) - startSample - e * n;
                    assertEquals(
                            share.offset(i, n, dropLast),
                            offset,
                            what + ": rank " + k + " epoch " + e + " sample " + i);
                    times[(int) offset]++;
                }
            }
            // The pad extra samples are the epoch's last ones, counted back from its end (round again if need be).
            long pad = (n + world - 1) / world * world - n;
            int[] extra = new int[(int) n];
            for (long j = 0; j < pad; j++) {
                extra[(int) (n - 1 - j % n)]++;
            }
            for (int u = 0; u < n; u++) {
                if (!dropLast) {
                    assertEquals(1 + extra[u], times[u], what + ": epoch " + e + " offset " + u);
                } else if (allDivide(n, world, batch)) {
                    assertEquals(u < n / world * world ? 1 : 0, times[u], what + ": epoch " + e + " offset " + u);
                }
            }
        }
        for (int k = 0; k < world; k++) {
            List<Long> got = released.get(k);
            for (int i = 0; i < got.size(); i++) {
                assertEquals(
                        startSample / g.producerBatchSize() + i,
                        (long) got.get(i),
                        what + ": rank " + k + " released out of order or twice");
            }
        }
    }

    /** Whether every rank's share divides into whole batches (so no short batch is dropped). */
    private static boolean allDivide(long n, int world, int[] batch) {
        for (int b : batch) {
            if (new RankShare(0, world).count(n, true) % b != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean allDone(boolean[] done) {
        for (boolean d : done) {
            if (!d) {
                return false;
            }
        }
        return true;
    }

    private static List<Long> offsets(RankShare s, long n, boolean dropLast) {
        List<Long> out = new ArrayList<>();
        for (long k = 0; k < s.count(n, dropLast); k++) {
            out.add(s.offset(k, n, dropLast));
        }
        return out;
    }
}
