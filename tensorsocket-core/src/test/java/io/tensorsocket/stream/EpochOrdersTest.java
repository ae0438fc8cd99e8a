package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The producer's epoch orders: seeded shuffles while no boundary is in force, chunks kept while one is. */
class EpochOrdersTest {
    private static SplittableRandom random(long epoch) {
        return new SplittableRandom(1000 + epoch);
    }

    @Test
    void withNoBoundaryEveryEpochIsTheSourcesOwnSeededShuffle() {
        EpochOrders orders = new EpochOrders(50, 50, true, EpochOrdersTest::random);
        for (long e = 0; e < 4; e++) {
            assertArrayEquals(ChunkedShuffle.first(50, random(e)), orders.draw(e, new int[0]));
            assertArrayEquals(EpochOrders.fresh(50, 50, true, random(e)), ChunkedShuffle.first(50, random(e)));
        }
    }

    @Test
    void aBoundaryKeepsEachChunksSamplesAndShufflesThemAnew() {
        EpochOrders orders = new EpochOrders(50, 50, true, EpochOrdersTest::random);
        int[] before = orders.draw(0, new int[0]);
        int[] after = orders.draw(1, new int[] {13, 31});
        for (int[] chunk : new int[][] {{0, 13}, {13, 31}, {31, 50}}) {
            int[] a = Arrays.copyOfRange(before, chunk[0], chunk[1]);
            int[] b = Arrays.copyOfRange(after, chunk[0], chunk[1]);
            assertFalse(Arrays.equals(a, b), "chunk " + Arrays.toString(chunk) + " was shuffled");
            Arrays.sort(a);
            Arrays.sort(b);
            assertArrayEquals(a, b, "chunk " + Arrays.toString(chunk) + " kept its samples");
        }
    }

    @Test
    void withDropLastAnEpochEmitsThePrefixAndItsTailStaysInTheLastChunk() {
        EpochOrders orders = new EpochOrders(50, 40, true, EpochOrdersTest::random);
        int[] before = orders.draw(0, new int[0]);
        assertEquals(40, before.length);
        int[] after = orders.draw(1, new int[] {25});
        int[] head = Arrays.copyOf(before, 25);
        int[] again = Arrays.copyOf(after, 25);
        Arrays.sort(head);
        Arrays.sort(again);
        assertArrayEquals(head, again);
        assertThrows(IllegalArgumentException.class, () -> orders.draw(2, new int[] {40}), "outside the emitted epoch");
    }

    @Test
    void withoutShuffleEveryEpochVisitsTheDataSetInOrder() {
        EpochOrders orders = new EpochOrders(5, 5, false, EpochOrdersTest::random);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, orders.draw(0, new int[0]));
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, orders.draw(1, new int[] {2}));
        assertThrows(IllegalArgumentException.class, () -> new EpochOrders(5, 6, true, EpochOrdersTest::random));
    }
}
