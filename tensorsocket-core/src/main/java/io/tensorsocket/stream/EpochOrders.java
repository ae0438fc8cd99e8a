package io.tensorsocket.stream;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.LongFunction;

/**
 * The sample order of each epoch a producer serves from a source that loads samples by index: {@link ChunkedShuffle}
 * applied epoch after epoch. An epoch drawn with no boundary in force is a fresh shuffle of the whole data set,
 * exactly the order the source gives without a producer; an epoch drawn with boundaries keeps the previous epoch's
 * chunks. Without shuffling every epoch visits {@code 0..n-1}, which is exact for any join.
 *
 * <p>With drop-last an epoch emits only the first {@code samplesPerEpoch} ids of its order; the dropped tail stays
 * in the last chunk. Pure and not thread-safe: the producer's loop draws one epoch at a time, from the boundaries
 * its core holds when the epoch begins.
 */
public final class EpochOrders {
    private final int datasetSize;
    private final int samplesPerEpoch;
    private final boolean shuffle;
    private final LongFunction<SplittableRandom> randomOf;
    private int[] previous;

    /**
     * @param datasetSize     samples in the data set
     * @param samplesPerEpoch samples an epoch emits: the data set's size, or less with drop-last
     * @param shuffle         whether epochs are shuffled
     * @param randomOf        the randomness of epoch {@code e}'s shuffle (seeded, so the orders replay)
     */
    public EpochOrders(
            int datasetSize, long samplesPerEpoch, boolean shuffle, LongFunction<SplittableRandom> randomOf) {
        if (datasetSize < 1 || samplesPerEpoch < 1 || samplesPerEpoch > datasetSize) {
            throw new IllegalArgumentException(
                    "an epoch emits 1 to " + datasetSize + " samples of the data set, not " + samplesPerEpoch);
        }
        this.datasetSize = datasetSize;
        this.samplesPerEpoch = (int) samplesPerEpoch;
        this.shuffle = shuffle;
        this.randomOf = randomOf;
    }

    /**
     * The ids epoch {@code epoch} emits, in order, given the offsets of the consumers attached mid-epoch now
     * ({@code boundaries}: sorted, distinct, in {@code (0, samplesPerEpoch)}).
     */
    public int[] draw(long epoch, int[] boundaries) {
        int[] order;
        if (!shuffle) {
            order = ChunkedShuffle.identity(datasetSize);
        } else if (previous == null || boundaries.length == 0) {
            order = ChunkedShuffle.first(datasetSize, randomOf.apply(epoch));
        } else {
            for (int b : boundaries) {
                if (b >= samplesPerEpoch) {
                    throw new IllegalArgumentException(
                            "boundary " + b + " is not inside an epoch of " + samplesPerEpoch + " samples");
                }
            }
            order = ChunkedShuffle.next(previous, boundaries, randomOf.apply(epoch));
        }
        previous = order;
        return order.length == samplesPerEpoch ? order.clone() : Arrays.copyOf(order, samplesPerEpoch);
    }

    /**
     * The randomness of epoch {@code epoch}'s shuffle for a source seeded with {@code seed} (a feeder's declared seed):
     * {@code SplittableRandom(seed * 0x9E3779B97F4A7C15 + epoch)}, modulo 2<sup>64</sup>. A feeder draws epoch 0's
     * order with it before its producer answers, so that its loader starts while the producer does
     * ({@code docs/test-vectors/chunked-shuffle.txt}, lines {@code epoch}).
     */
    public static SplittableRandom seeded(long seed, long epoch) {
        return new SplittableRandom(seed * 0x9E3779B97F4A7C15L + epoch);
    }

    /** The order of epoch {@code epoch} when no consumer joins mid-epoch: the source's own, without a producer. */
    public static int[] fresh(int datasetSize, long samplesPerEpoch, boolean shuffle, SplittableRandom random) {
        return new EpochOrders(datasetSize, samplesPerEpoch, shuffle, e -> random).draw(0, new int[0]);
    }
}
