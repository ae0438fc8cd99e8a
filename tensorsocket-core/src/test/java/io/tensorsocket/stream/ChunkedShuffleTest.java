package io.tensorsocket.stream;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.testing.RandomTrials;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The chunked shuffle against what it promises: consumers join at random stream positions and leave at random
 * times over many epochs, and every full window of one epoch's length that a consumer read while it was attached
 * holds every sample exactly once; with no boundary an epoch is a shuffle of everything; orders replay from the
 * seed.
 */
class ChunkedShuffleTest {

    @Test
    void everyWindowOfEveryConsumerIsAPermutationWhereverItJoinedAndWheneverItLeft() {
        RandomTrials.run(400, 0xC4_0C4EL, r -> check(r.nextInt(1, 200), r.nextInt(1, 9), r.nextInt(2, 8), r));
    }

    private record Consumer(long joined, long leaves) {}

    private static void check(int n, int consumers, int epochs, SplittableRandom r) {
        long end = (long) n * epochs;
        List<Consumer> all = new ArrayList<>();
        for (int c = 0; c < consumers; c++) {
            long joined = r.nextLong(end);
            all.add(new Consumer(joined, joined + r.nextLong(1, end + 1)));
        }
        // The producer draws each epoch's order at its start, with the boundaries of the consumers attached then.
        int[] stream = new int[(int) end];
        int[] order = ChunkedShuffle.first(n, r.split());
        for (int e = 0; e < epochs; e++) {
            if (e > 0) {
                ChunkedShuffle.Boundaries live = new ChunkedShuffle.Boundaries();
                long start = (long) e * n;
                for (Consumer c : all) {
                    if (c.joined() < start && c.leaves() > start) {
                        live.add((int) (c.joined() % n));
                    }
                }
                order = ChunkedShuffle.next(order, live.sorted(), r.split());
            }
            System.arraycopy(order, 0, stream, e * n, n);
        }
        for (Consumer c : all) {
            for (long w = c.joined(); w + n <= Math.min(end, c.leaves()); w += n) {
                int[] window = Arrays.copyOfRange(stream, (int) w, (int) w + n);
                Arrays.sort(window);
                for (int i = 0; i < n; i++) {
                    assertEquals(
                            i, window[i], "consumer joined at " + c.joined() + ", window from " + w + " of n " + n);
                }
            }
        }
    }

    @Test
    void withNoBoundaryAnEpochIsAFreshShuffleAndWithBoundariesChunksKeepTheirSamples() {
        SplittableRandom r = new SplittableRandom(7);
        int[] first = ChunkedShuffle.first(1000, r);
        int[] fresh = ChunkedShuffle.next(first, new int[0], r);
        int samePlace = 0;
        for (int i = 0; i < 1000; i++) {
            samePlace += first[i] == fresh[i] ? 1 : 0;
        }
        assertTrue(samePlace < 10, samePlace + " samples kept their place");
        int[] chunked = ChunkedShuffle.next(first, new int[] {100, 700}, r);
        assertEquals(sorted(first, 0, 100), sorted(chunked, 0, 100));
        assertEquals(sorted(first, 100, 700), sorted(chunked, 100, 700));
        assertEquals(sorted(first, 700, 1000), sorted(chunked, 700, 1000));
        assertFalse(Arrays.equals(first, chunked));
    }

    @Test
    void ordersReplayFromTheRandomnessAndBadBoundariesAreRefused() {
        int[] a = ChunkedShuffle.next(
                ChunkedShuffle.first(50, new SplittableRandom(1)), new int[] {10}, new SplittableRandom(2));
        int[] b = ChunkedShuffle.next(
                ChunkedShuffle.first(50, new SplittableRandom(1)), new int[] {10}, new SplittableRandom(2));
        assertArrayEquals(a, b);
        for (int[] bad : new int[][] {{0}, {50}, {20, 10}, {10, 10}}) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> ChunkedShuffle.next(a, bad, new SplittableRandom(3)),
                    Arrays.toString(bad));
        }
    }

    @Test
    void boundariesAreCountedSoTheLastConsumerAtAnOffsetTakesItAway() {
        ChunkedShuffle.Boundaries b = new ChunkedShuffle.Boundaries();
        b.add(0);
        b.add(30);
        b.add(10);
        b.add(30);
        assertArrayEquals(new int[] {10, 30}, b.sorted());
        b.remove(30);
        assertArrayEquals(new int[] {10, 30}, b.sorted());
        b.remove(30);
        b.remove(0);
        assertArrayEquals(new int[] {10}, b.sorted());
    }

    /**
     * {@code docs/test-vectors/chunked-shuffle.txt}: orders drawn from given seeds, which the Python port
     * ({@code stream.chunked_first}, {@code chunked_next}) reproduces. Rewrite with {@code -Dtensorsocket.writeVectors=true}.
     */
    @Test
    void theSharedVectorsAreWhatThisRuleDraws() throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add("# first <samples> <seed> -> <order>   (java.util.SplittableRandom(seed))");
        lines.add("# next <seed> <boundaries, or -> <previous order> -> <order>");
        int[] order = ChunkedShuffle.first(24, new SplittableRandom(11));
        lines.add("first 24 11 -> " + join(order));
        int[][] boundaries = {{}, {5}, {3, 17}, {1, 2, 23}, {}};
        for (int i = 0; i < boundaries.length; i++) {
            int[] next = ChunkedShuffle.next(order, boundaries[i], new SplittableRandom(100 + i));
            lines.add("next " + (100 + i) + " " + (boundaries[i].length == 0 ? "-" : join(boundaries[i])) + " "
                    + join(order) + " -> " + join(next));
            order = next;
        }
        lines.add(
                "# epoch <samples> <source seed> <epoch> -> <order of that epoch with no boundary>   (EpochOrders.seeded)");
        for (long[] c : new long[][] {{24, 7, 0}, {24, 7, 1}, {50, 4611686018427387903L, 0}}) {
            lines.add("epoch " + c[0] + " " + c[1] + " " + c[2] + " -> "
                    + join(ChunkedShuffle.first((int) c[0], EpochOrders.seeded(c[1], c[2]))));
        }
        Path file = StreamScenariosTest.vectors().resolveSibling("chunked-shuffle.txt");
        String text = String.join("\n", lines) + "\n";
        if (Boolean.getBoolean("tensorsocket.writeVectors")) {
            Files.writeString(file, text);
        }
        assertEquals(Files.readString(file), text);
    }

    private static String join(int[] a) {
        return Arrays.stream(a).mapToObj(Integer::toString).collect(Collectors.joining(","));
    }

    private static String sorted(int[] a, int from, int to) {
        int[] s = Arrays.copyOfRange(a, from, to);
        Arrays.sort(s);
        return Arrays.toString(s);
    }
}
