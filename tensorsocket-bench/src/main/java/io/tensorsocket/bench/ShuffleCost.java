package io.tensorsocket.bench;

import io.tensorsocket.stream.EpochOrders;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * What exact late-join epochs cost in randomness: {@code K} consumers join at uniformly random offsets of an epoch and
 * stay, and the producer's orders ({@link EpochOrders}) keep the chunks their offsets cut. Measured between
 * consecutive epochs, against {@code K = 0} (a fresh shuffle every epoch):
 *
 * <ul>
 *   <li>{@code positionShift}: how far a sample moves, the mean of {@code |position(e+1) - position(e)| / n}
 *       (1/3 for a fresh shuffle; 0 for a sample that never moves);</li>
 *   <li>{@code batchmatesAgain}: of the pairs of samples that shared a batch in epoch {@code e}, the fraction that
 *       share one again in {@code e+1} (about {@code (b-1)/(n-1)} for a fresh shuffle).</li>
 * </ul>
 */
public final class ShuffleCost {

    /** Averages over trials and epochs. */
    public record Cost(int consumers, double positionShift, double batchmatesAgain) {}

    private ShuffleCost() {}

    /** {@code trials} runs of {@code epochs} epochs of {@code n} samples in batches of {@code batch}. */
    public static Cost measure(int n, int batch, int consumers, int trials, int epochs, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        double shift = 0;
        double again = 0;
        int pairsOfEpochs = 0;
        for (int t = 0; t < trials; t++) {
            int[] boundaries = r.ints(consumers, 1, n).distinct().sorted().toArray();
            long trialSeed = r.nextLong();
            EpochOrders orders = new EpochOrders(n, n, true, e -> new SplittableRandom(trialSeed + e));
            int[] previous = orders.draw(0, new int[0]);
            for (int e = 1; e < epochs; e++) {
                int[] next = orders.draw(e, boundaries);
                shift += positionShift(previous, next);
                again += batchmatesAgain(previous, next, batch);
                pairsOfEpochs++;
                previous = next;
            }
        }
        return new Cost(consumers, shift / pairsOfEpochs, again / pairsOfEpochs);
    }

    private static double positionShift(int[] before, int[] after) {
        int[] at = positions(before);
        double sum = 0;
        for (int i = 0; i < after.length; i++) {
            sum += Math.abs(i - at[after[i]]);
        }
        return sum / after.length / after.length;
    }

    private static double batchmatesAgain(int[] before, int[] after, int batch) {
        int[] at = positions(before);
        long together = 0;
        long pairs = 0;
        int[] previousBatch = new int[batch];
        for (int start = 0; start < after.length; start += batch) {
            int size = Math.min(batch, after.length - start);
            for (int i = 0; i < size; i++) {
                previousBatch[i] = at[after[start + i]] / batch;
            }
            Arrays.sort(previousBatch, 0, size);
            for (int i = 0, j; i < size; i = j) {
                for (j = i; j < size && previousBatch[j] == previousBatch[i]; j++) {
                    // a run of samples that were batch-mates before
                }
                long run = (long) j - i;
                together += run * (run - 1) / 2;
            }
            pairs += (long) size * (size - 1) / 2;
        }
        return (double) together / pairs;
    }

    private static int[] positions(int[] order) {
        int[] at = new int[order.length];
        for (int i = 0; i < order.length; i++) {
            at[order[i]] = i;
        }
        return at;
    }
}
