package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.StartPolicy;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.stream.EpochOrders;
import io.tensorsocket.stream.RankShare;
import io.tensorsocket.stream.StreamGeometry;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The rest of a checkpoint's epoch: replayed from the draws it was read under, it is exactly the samples of the epoch
 * not read before the checkpoint, in the order they would have come, wherever the epoch began and whatever was read;
 * a state of another data set or seed is refused naming the difference.
 */
class ResumePlanTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=100,shape=2,dtype=float32,seed=3");
    private static final SyntheticSource SOURCE = new SyntheticSource(SPEC, 10);
    private static final StreamGeometry G = new StreamGeometry(100, 10);
    private static final Message.Hello PLAIN = new Message.Hello(8, false, 1, "t", StartPolicy.JOIN_NOW);

    /** The orders the producer drew over {@code draws}, as its loop draws them. */
    private static List<int[]> drawn(long[] draws) {
        EpochOrders orders = new EpochOrders(100, 100, true, SOURCE::shuffleRandom);
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < draws.length; ) {
            int k = (int) draws[i + 1];
            int[] b = new int[k];
            for (int j = 0; j < k; j++) {
                b[j] = (int) draws[i + 2 + j];
            }
            out.add(orders.draw(draws[i], b));
            i += 2 + k;
        }
        return out;
    }

    private static Message.Resume resume(long base, long handed, long[] draws) {
        return new Message.Resume(base, handed, DrawLog.orderKey(SOURCE), 100, 100, true, draws);
    }

    private static Set<Integer> ids(ResumePlan plan) {
        Set<Integer> ids = new HashSet<>();
        for (ResumePlan.Segment s : plan.segments()) {
            for (int id : s.ids()) {
                assertTrue(ids.add(id), "sample " + id + " twice");
            }
        }
        return ids;
    }

    @Test
    void anEpochFromItsStartGoesOnAfterTheSamplesRead() throws Exception {
        long[] draws = {0, 0, 1, 0};
        int[] epoch1 = drawn(draws).get(1);
        ResumePlan plan = ResumePlan.of(resume(100, 37, draws), PLAIN, G, SOURCE, "p");
        assertEquals(137, plan.from());
        assertEquals(200, plan.end());
        assertEquals(1, plan.segments().size());
        Set<Integer> all = ids(plan);
        for (int i = 0; i < 37; i++) {
            assertTrue(all.add(epoch1[i]), "read before and served again: " + epoch1[i]);
        }
        assertEquals(100, all.size(), "the epoch once");
        assertEquals(epoch1[37], plan.segments().getFirst().ids()[0], "in the order it would have come");
    }

    @Test
    void anEpochThatStraddlesTwoProducerEpochsIsCompletedFromBoth() throws Exception {
        // joined at sample 30 of epoch 1: its epoch is epoch 1 [30, 100) and epoch 2 [0, 30), drawn keeping that chunk
        long[] draws = {0, 0, 1, 1, 30, 2, 1, 30};
        List<int[]> orders = drawn(draws);
        for (long handed : new long[] {5, 69, 70, 95}) {
            ResumePlan plan = ResumePlan.of(resume(130, handed, draws), PLAIN, G, SOURCE, "p");
            Set<Integer> all = ids(plan);
            for (long p = 130; p < 130 + handed; p++) {
                int[] order = orders.get((int) (p / 100));
                assertTrue(all.add(order[(int) (p % 100)]), "handed " + handed + ": read twice at " + p);
            }
            assertEquals(100, all.size(), "handed " + handed + ": the epoch once");
            assertEquals(130 + handed, plan.from());
        }
    }

    @Test
    void anEpochWhoseNextDrawWasNotLoggedYetIsCompletedFromTheChunkItKeeps() throws Exception {
        long[] draws = {0, 0, 1, 1, 30}; // killed before epoch 2 was drawn
        int[] epoch1 = drawn(draws).get(1);
        ResumePlan plan = ResumePlan.of(resume(130, 10, draws), PLAIN, G, SOURCE, "p");
        Set<Integer> all = ids(plan);
        for (int i = 30; i < 40; i++) {
            assertTrue(all.add(epoch1[i]));
        }
        assertEquals(100, all.size());
    }

    @Test
    void aRankResumesFromItsNextSampleOfItsShare() throws Exception {
        Message.Hello rank1 = new Message.Hello(4, false, 1, "t", StartPolicy.JOIN_NOW, false, "job", 1, 2);
        ResumePlan plan = ResumePlan.of(resume(0, 10, new long[] {0, 0}), rank1, G, SOURCE, "p");
        assertEquals(new RankShare(1, 2).offset(10, 100, false), plan.from());
    }

    @Test
    void aStateOfAnotherDataSetOrSeedIsRefusedNamingTheDifference() {
        Message.Resume other =
                new Message.Resume(100, 5, DrawLog.orderKey(SOURCE) + 1, 60000, 100, true, new long[] {0, 0, 1, 0});
        ResumePlan.Refused e =
                assertThrows(ResumePlan.Refused.class, () -> ResumePlan.of(other, PLAIN, G, SOURCE, "p"));
        assertTrue(e.getMessage().contains("a data set of 60000 samples, this one serves 100"), e.getMessage());
        assertTrue(e.getMessage().contains("another seed"), e.getMessage());
        ResumePlan.Refused none = assertThrows(
                ResumePlan.Refused.class,
                () -> ResumePlan.of(resume(300, 5, new long[] {0, 0}), PLAIN, G, SOURCE, "p"));
        assertTrue(none.getMessage().contains("no draw of epoch 3"), none.getMessage());
    }
}
