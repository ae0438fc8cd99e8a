package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.testing.RandomTrials;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * For any loader batch size (with a short last batch or not), any join point, any consumer batch size,
 * with or without drop-last: each consumer epoch hands out every sample of one epoch exactly once, in
 * order, and every producer batch handed to the consumer is released exactly once, in order (1500 cases
 * drawn at random, reproducibly: see {@link RandomTrials}).
 */
class StreamPropertiesTest {

    @Test
    void everySampleOnceInOrderAndEverySlotReleasedOnce() {
        RandomTrials.run(
                1500,
                0x5eed_0001L,
                r -> check(
                        r.nextInt(1, 61),
                        r.nextInt(1, 17),
                        r.nextInt(0, 7),
                        r.nextInt(0, 41),
                        r.nextBoolean(),
                        r.nextInt(1, 71),
                        r.nextBoolean(),
                        r.nextInt(1, 5),
                        r.nextInt(0, 4)));
    }

    private static void check(
            int samplesPerEpoch,
            int producerBatch,
            int rubberBand,
            int publishedBeforeJoin,
            boolean epochEndedBeforeJoin,
            int consumerBatch,
            boolean dropLast,
            int consumerEpochs,
            int leaveAfter) {
        String with = "samples " + samplesPerEpoch + ", producer batch " + producerBatch + ", rubber band " + rubberBand
                + ", published before join " + publishedBeforeJoin + ", epoch ended " + epochEndedBeforeJoin
                + ", consumer batch " + consumerBatch + ", drop last " + dropLast + ", epochs " + consumerEpochs
                + ", leave after " + leaveAfter + ": ";
        try {
            checkCase(
                    samplesPerEpoch,
                    producerBatch,
                    rubberBand,
                    publishedBeforeJoin,
                    epochEndedBeforeJoin,
                    consumerBatch,
                    dropLast,
                    consumerEpochs,
                    leaveAfter);
        } catch (AssertionError e) {
            throw new AssertionError(with + e.getMessage(), e);
        }
    }

    private static void checkCase(
            int samplesPerEpoch,
            int producerBatch,
            int rubberBand,
            int publishedBeforeJoin,
            boolean epochEndedBeforeJoin,
            int consumerBatch,
            boolean dropLast,
            int consumerEpochs,
            int leaveAfter) {
        StreamSimulation sim = new StreamSimulation(
                samplesPerEpoch,
                producerBatch,
                rubberBand,
                publishedBeforeJoin,
                epochEndedBeforeJoin,
                consumerBatch,
                dropLast,
                consumerEpochs,
                0,
                leaveAfter);
        StreamSimulation.Result r = sim.run();
        StreamGeometry g = r.geometry();
        StartPoint start = ((StreamSimulation.Start) r.events().getFirst()).start();
        long startPos = g.position(start.epoch(), start.sample());

        long epochBase = startPos;
        long epoch = start.epoch();
        long expectedPos = startPos;
        long index = 0;
        List<Long> released = new ArrayList<>();
        long epochSamples = 0;
        for (StreamSimulation.Event e : r.events().subList(1, r.events().size())) {
            switch (e) {
                case StreamSimulation.Taken t -> {
                    var plan = t.plan();
                    assertEquals(epoch, plan.epoch());
                    assertEquals(index++, plan.index());
                    assertEquals(expectedPos - epochBase, plan.sampleStart());
                    long pos = expectedPos;
                    int sum = 0;
                    for (ConsumerStream.Piece p : plan.pieces()) {
                        BatchPosition b = r.published().get((int) p.seq());
                        assertEquals(pos, b.start(g) + p.offset(), "pieces continue the stream");
                        assertEquals(sum, p.destOffset());
                        assertTrue(p.offset() + p.samples() <= b.samples());
                        pos += p.samples();
                        sum += p.samples();
                    }
                    assertEquals(plan.samples(), sum);
                    assertTrue(
                            plan.samples() == consumerBatch
                                    || (!dropLast && expectedPos + plan.samples() == epochBase + samplesPerEpoch),
                            "only an epoch's last batch is short, and only without drop-last");
                    expectedPos = pos;
                    epochSamples += sum;
                }
                case StreamSimulation.Released rel -> released.add(rel.seq());
                case StreamSimulation.EpochDone d -> {
                    long want = dropLast ? samplesPerEpoch / consumerBatch * consumerBatch : samplesPerEpoch;
                    if (leaveAfter > 0) {
                        want = Math.min(want, (long) leaveAfter * consumerBatch);
                    }
                    assertEquals(want, epochSamples, "samples handed out in epoch " + d.epoch());
                    epoch++;
                    epochBase += samplesPerEpoch;
                    expectedPos = epochBase;
                    epochSamples = 0;
                    index = 0;
                }
                case StreamSimulation.Start s -> throw new AssertionError("a second start");
            }
        }
        // Releases: consecutive from the first batch handed over, each once, covering every batch fully passed.
        long first = start.retainedCount() > 0 ? start.firstRetained() : publishedBeforeJoin;
        for (int i = 0; i < released.size(); i++) {
            assertEquals(first + i, released.get(i), "releases in order, each once");
        }
        long finalPosition = leaveAfter > 0 ? r.finalPosition() : startPos + (long) consumerEpochs * samplesPerEpoch;
        assertTrue(r.finalPosition() <= finalPosition);
        long passed = r.published().stream()
                .filter(b -> b.seq() >= first && b.end(g) <= finalPosition)
                .count();
        assertEquals(passed, released.size(), "every batch fully passed is released");
    }
}
