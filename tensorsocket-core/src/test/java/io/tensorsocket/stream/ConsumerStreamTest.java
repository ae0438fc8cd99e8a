package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Regrouping, spans and releases of one consumer, step by step (the example in ConsumerStream's Javadoc). */
class ConsumerStreamTest {
    private static final StreamGeometry G = new StreamGeometry(14, 4);

    @Test
    void regroupsFourSampleBatchesIntoSixAndReleasesEachOnceConsumed() {
        ConsumerStream c = new ConsumerStream(G, 8, 6, false, 0, 0);
        c.beginEpoch();
        assertEquals(ConsumerStream.NEED_MORE, c.nextBatch());
        c.accept(new BatchPosition(0, 0, 0, 0, 4), 0);
        assertEquals(ConsumerStream.NEED_MORE, c.nextBatch());
        c.accept(new BatchPosition(1, 0, 1, 4, 4), 1);
        assertEquals(6, c.nextBatch());
        ConsumerStream.BatchPlan b0 = c.take(6);
        assertEquals(
                List.of(new ConsumerStream.Piece(0, 0, 0, 4, 0), new ConsumerStream.Piece(1, 1, 0, 2, 4)), b0.pieces());
        assertEquals(0, c.pollReleasable());
        assertEquals(-1, c.pollReleasable()); // batch 1 still has two samples to hand out
        c.accept(new BatchPosition(2, 0, 2, 8, 4), 2);
        c.accept(new BatchPosition(3, 0, 3, 12, 2), 3);
        assertEquals(6, c.nextBatch());
        c.take(6);
        assertEquals(1, c.pollReleasable());
        assertEquals(2, c.pollReleasable());
        assertEquals(2, c.nextBatch()); // the short last batch
        ConsumerStream.BatchPlan last = c.take(2);
        assertTrue(last.single());
        assertEquals(-1, c.pollReleasable()); // a view pins its slot
        c.unpin(3);
        assertEquals(3, c.pollReleasable());
        assertEquals(0, c.nextBatch());
    }

    @Test
    void aMoveToALaneGivesBackTheBatchesNotBegunAndTakesTheLanesNext() {
        long lane = 1L << 40;
        ConsumerStream c = new ConsumerStream(G, 8, 6, false, 0, 0);
        c.beginEpoch();
        for (int i = 0; i < 3; i++) {
            c.accept(new BatchPosition(i, 0, i, 4L * i, 4), i);
        }
        c.take(c.nextBatch()); // samples 0..5: batch 0 consumed, batch 1 begun, batch 2 not
        assertEquals(8, c.moveTo(lane, lane, 8, 4, true), "the lane starts where batch 1 ends");
        assertEquals(8, c.receivedUpTo());
        assertThrows(
                IllegalArgumentException.class,
                () -> c.accept(new BatchPosition(lane, 0, 2, 8, 4), 1),
                "the lane's batch lies in the lane's slot seq - seqBase");
        c.accept(new BatchPosition(lane, 0, 2, 8, 4), 0);
        assertEquals(6, c.nextBatch());
        ConsumerStream.BatchPlan b = c.take(6);
        assertEquals(
                List.of(new ConsumerStream.Piece(1, 1, 2, 2, 0), new ConsumerStream.Piece(lane, 8, 0, 4, 2)),
                b.pieces(),
                "the lane's slot 0 is slot 8 of those the consumer reads, after the arena's 8");
        assertEquals(0, c.pollReleasable());
        assertEquals(1, c.pollReleasable());
        assertEquals(lane, c.pollReleasable());
    }

    @Test
    void aConsumerThatCaughtUpMovesBackKeepingEverything() {
        long lane = 2L << 40;
        ConsumerStream c = new ConsumerStream(G, 8, 4, false, 0, 0);
        c.beginEpoch();
        c.moveTo(lane, lane, 8, 4, true);
        c.accept(new BatchPosition(lane, 0, 0, 0, 4), 0);
        c.accept(new BatchPosition(lane + 1, 0, 1, 4, 4), 1);
        assertEquals(8, c.moveTo(9, 0, 0, 8, false), "nothing given back");
        c.accept(new BatchPosition(9, 0, 2, 8, 4), 1); // the main stream's batch 9 in its slot 9 % 8
        assertEquals(4, c.nextBatch());
        assertEquals(
                List.of(new ConsumerStream.Piece(lane, 8, 0, 4, 0)), c.take(4).pieces());
    }

    @Test
    void dropLastSkipsTheShortTailAndStillReleasesIt() {
        ConsumerStream c = new ConsumerStream(G, 8, 6, true, 0, 0);
        c.beginEpoch();
        c.accept(new BatchPosition(0, 0, 0, 0, 4), 0);
        c.accept(new BatchPosition(1, 0, 1, 4, 4), 1);
        c.accept(new BatchPosition(2, 0, 2, 8, 4), 2);
        c.take(c.nextBatch());
        c.take(c.nextBatch());
        assertEquals(ConsumerStream.NEED_MORE, c.nextBatch()); // the tail must arrive before it can be skipped
        c.accept(new BatchPosition(3, 0, 3, 12, 2), 3);
        assertEquals(0, c.nextBatch());
        assertEquals(
                List.of(0L, 1L, 2L, 3L),
                List.of(c.pollReleasable(), c.pollReleasable(), c.pollReleasable(), c.pollReleasable()));
        assertEquals(2, c.batchesPerEpoch());
    }

    @Test
    void aRollingEpochEndsOneEpochOfSamplesAfterItsStart() {
        ConsumerStream c = new ConsumerStream(G, 8, 20, false, 0, 8);
        c.beginEpoch();
        assertEquals(8, c.epochBase());
        assertEquals(22, c.epochEnd());
        assertEquals(8 + 14 + 3, c.streamPosition(1, 3));
    }

    @Test
    void aDescriptorOutOfOrderIsRefused() {
        ConsumerStream c = new ConsumerStream(G, 8, 6, false, 0, 0);
        assertThrows(IllegalArgumentException.class, () -> c.accept(new BatchPosition(0, 0, 1, 4, 4), 0)); // gap
        assertThrows(IllegalArgumentException.class, () -> c.accept(new BatchPosition(0, 0, 0, 0, 4), 1)); // wrong slot
        c.accept(new BatchPosition(0, 0, 0, 0, 4), 0);
        assertThrows(
                IllegalArgumentException.class, () -> c.accept(new BatchPosition(2, 0, 1, 4, 4), 2)); // seq skipped
    }
}
