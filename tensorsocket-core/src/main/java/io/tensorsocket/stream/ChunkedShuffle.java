package io.tensorsocket.stream;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * The sample order of each producer epoch, chosen so that every consumer's every epoch is exactly one pass over
 * the data set wherever in the stream it joined, while every produced batch still serves every consumer.
 *
 * <p>The rule. A consumer that joined at offset {@code o} of a producer epoch reads windows of one epoch's length:
 * the rest of that epoch from {@code o}, then the first {@code o} samples of the next, and so on. Such a window is a
 * permutation of the data set exactly when the next epoch's first {@code o} samples are, as a set, the current
 * epoch's first {@code o}. So the offsets of the live consumers that joined mid-epoch, its <em>boundaries</em>, cut
 * the epoch into chunks {@code [0, b1), [b1, b2), ..., [bk, n)}, and each new epoch shuffles the samples within each
 * chunk and keeps every chunk's contents. With no boundary (every consumer started at an epoch start) a new epoch
 * is a fresh shuffle of everything, as without this rule. A boundary goes when its consumer leaves; consumers at
 * the same offset share one. An epoch of fewer samples than the data set (drop-last) needs nothing more: its
 * dropped tail lies in the last chunk and may change from epoch to epoch.
 *
 * <p>What it costs: while boundaries live, a sample stays in its chunk, so its position in one epoch bounds its
 * position in the next, and two samples of different chunks never share a batch unless it spans the boundary.
 *
 * <p>Pure: the caller gives the previous order, the boundaries in force when the new epoch is drawn, and the
 * randomness (drawn from the source's seed and the epoch, so the orders replay).
 */
public final class ChunkedShuffle {

    private ChunkedShuffle() {}

    /** The first epoch's order: a uniform shuffle of {@code 0..samples-1}. */
    public static int[] first(int samples, SplittableRandom random) {
        int[] order = identity(samples);
        shuffle(order, 0, samples, random);
        return order;
    }

    /** {@code 0..samples-1} in order: every epoch of a source that does not shuffle. */
    public static int[] identity(int samples) {
        int[] order = new int[samples];
        for (int i = 0; i < samples; i++) {
            order[i] = i;
        }
        return order;
    }

    /**
     * The next epoch's order after {@code previous}: each chunk between consecutive {@code boundaries} (sorted,
     * distinct, each in {@code (0, previous.length)}) keeps its samples, in a new random order.
     *
     * @throws IllegalArgumentException if the boundaries are not sorted, distinct and inside the epoch
     */
    public static int[] next(int[] previous, int[] boundaries, SplittableRandom random) {
        int[] order = previous.clone();
        int from = 0;
        for (int b : boundaries) {
            if (b <= from || b >= order.length) {
                throw new IllegalArgumentException("boundaries " + Arrays.toString(boundaries)
                        + " are not sorted, distinct" + " and inside an epoch of " + order.length + " samples");
            }
            shuffle(order, from, b, random);
            from = b;
        }
        shuffle(order, from, order.length, random);
        return order;
    }

    private static void shuffle(int[] a, int from, int to, SplittableRandom r) {
        for (int i = to - 1; i > from; i--) {
            int j = from + r.nextInt(i - from + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }

    /**
     * The boundaries in force: the offsets at which live consumers joined mid-epoch, counted, so that a boundary
     * goes with the last consumer that has it. Not thread-safe: the producer keeps it under its lock.
     */
    public static final class Boundaries {
        private final TreeMap<Integer, Integer> count = new TreeMap<>();

        /** A consumer joined at {@code offset} of a producer epoch (0: at its start, which needs no boundary). */
        public void add(int offset) {
            if (offset > 0) {
                count.merge(offset, 1, Integer::sum);
            }
        }

        /** The consumer that joined at {@code offset} left. */
        public void remove(int offset) {
            if (offset > 0) {
                count.computeIfPresent(offset, (k, n) -> n == 1 ? null : n - 1);
            }
        }

        /** The boundaries now, sorted. */
        public int[] sorted() {
            return count.keySet().stream().mapToInt(Integer::intValue).toArray();
        }
    }
}
