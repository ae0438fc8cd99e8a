package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import org.junit.jupiter.api.Test;

/** The join rule on its own: where a consumer starts for each state of the producer's stream. */
class JoinRuleTest {
    private static final StreamGeometry G = new StreamGeometry(40, 4); // 10 batches per epoch

    private static ProducerStream after(int batches) {
        ProducerStream s = new ProducerStream(G);
        for (int q = 0; q < batches; q++) {
            if (s.epochComplete()) {
                s.endEpoch(s.nextEpoch());
            }
            s.publish(q, 4);
        }
        return s;
    }

    @Test
    void beforeAnyBatchItStartsAtTheFirstEpochStart() {
        assertEquals(StartPoint.of(StartMode.EPOCH_START, 0, 0), new JoinRule(3).decide(after(0)));
    }

    @Test
    void whileTheEpochsFirstBatchIsInTheRubberBandItStartsThereWithEveryBatchSinceReplayed() {
        assertEquals(new StartPoint(StartMode.EPOCH_START, 0, 0, 0, 2), new JoinRule(3).decide(after(3)));
    }

    @Test
    void onceTheEpochsFirstBatchLeftTheRubberBandItRollsFromTheNextBatch() {
        StartPoint p = new JoinRule(3).decide(after(4));
        assertEquals(StartPoint.of(StartMode.ROLLING, 0, 16), p);
        assertEquals(0, p.retainedCount());
    }

    @Test
    void whereTheProducerChoosesTheOrderAMidEpochJoinerStartsExactWhereTheRollingOneWould() {
        JoinRule exact = new JoinRule(3, StartMode.EXACT);
        assertEquals(StartPoint.of(StartMode.EXACT, 0, 16), exact.decide(after(4)));
        assertEquals(
                new StartPoint(StartMode.EPOCH_START, 0, 0, 0, 2), exact.decide(after(3)), "the rubber band first");
        assertEquals(StartPoint.of(StartMode.EPOCH_START, 1, 0), exact.decide(after(4), StartPolicy.NEXT_EPOCH_START));
        assertThrows(IllegalArgumentException.class, () -> new JoinRule(3, StartMode.EPOCH_START));
    }

    @Test
    void withoutARubberBandItRollsAsSoonAsTheFirstBatchIsOut() {
        assertEquals(StartPoint.of(StartMode.ROLLING, 0, 4), new JoinRule(0).decide(after(1)));
    }

    @Test
    void afterAnEpochEndedItStartsAtTheNextEpoch() {
        ProducerStream s = after(10);
        s.endEpoch(0);
        assertEquals(StartPoint.of(StartMode.EPOCH_START, 1, 0), new JoinRule(3).decide(s));
    }

    @Test
    void afterAnEpochsLastBatchButBeforeItsEndTheFullEpochIsReplayedIfTheBandHoldsIt() {
        assertEquals(new StartPoint(StartMode.EPOCH_START, 0, 0, 0, 9), new JoinRule(10).decide(after(10)));
        // else the consumer rolls from the next epoch's first sample: the same position, counted as rolling
        assertEquals(StartPoint.of(StartMode.ROLLING, 0, 40), new JoinRule(3).decide(after(10)));
    }

    @Test
    void inTheSecondEpochTheBandCountsFromThatEpochsFirstBatch() {
        assertEquals(new StartPoint(StartMode.EPOCH_START, 1, 0, 10, 11), new JoinRule(2).decide(after(12)));
        assertEquals(StartPoint.of(StartMode.ROLLING, 1, 12), new JoinRule(2).decide(after(13)));
    }

    @Test
    void aConsumerThatWaitsForTheNextEpochStartNeverRollsAndIsSentNothingBeforeIt() {
        JoinRule rule = new JoinRule(3);
        // inside the band, or before any batch, waiting changes nothing
        assertEquals(rule.decide(after(3)), rule.decide(after(3), StartPolicy.NEXT_EPOCH_START));
        assertEquals(rule.decide(after(0)), rule.decide(after(0), StartPolicy.NEXT_EPOCH_START));
        // beyond it: the next epoch's start instead of rolling
        StartPoint p = rule.decide(after(4), StartPolicy.NEXT_EPOCH_START);
        assertEquals(StartPoint.of(StartMode.EPOCH_START, 1, 0), p);
        assertEquals(false, p.sends(new BatchPosition(4, 0, 4, 16, 4), G));
        assertEquals(false, p.sends(new BatchPosition(9, 0, 9, 36, 4), G));
        assertEquals(true, p.sends(new BatchPosition(10, 1, 0, 0, 4), G));
        assertEquals(StartPoint.of(StartMode.EPOCH_START, 2, 0), rule.decide(after(14), StartPolicy.NEXT_EPOCH_START));
    }

    @Test
    void aSourceThatBreaksTheEpochsShapeIsTold() {
        ProducerStream s = new ProducerStream(G);
        assertThrows(IllegalStateException.class, () -> s.publish(0, 3)); // short batch mid-epoch
        assertThrows(IllegalArgumentException.class, () -> s.publish(0, 5)); // over the batch size
        s.publish(0, 4);
        assertThrows(IllegalStateException.class, () -> s.endEpoch(0)); // 4 of 40 samples
    }
}
