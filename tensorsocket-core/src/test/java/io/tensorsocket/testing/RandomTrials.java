package io.tensorsocket.testing;

import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * Runs a property over many randomly drawn cases, reproducibly: trial {@code i} draws from a generator
 * seeded with {@code seed + i}, and a failing trial is reported with that seed, so rerunning it with
 * {@code -Dtensorsocket.trial.seed=S -Dtensorsocket.trial.count=1} repeats exactly the failing case.
 */
public final class RandomTrials {
    private RandomTrials() {}

    /** Runs {@code property} {@code tries} times, each with a generator of its own. */
    public static void run(int tries, long seed, Consumer<SplittableRandom> property) {
        long first = Long.getLong("tensorsocket.trial.seed", seed);
        int count = Integer.getInteger("tensorsocket.trial.count", tries);
        for (int i = 0; i < count; i++) {
            long s = first + i;
            try {
                property.accept(new SplittableRandom(s));
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError(
                        "trial " + (i + 1) + " of " + count + " failed (seed " + s
                                + "; rerun it alone with -Dtensorsocket.trial.seed=" + s
                                + " -Dtensorsocket.trial.count=1): "
                                + e.getMessage(),
                        e);
            }
        }
    }

    /** {@code n} random bytes. */
    public static byte[] bytes(SplittableRandom r, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        return b;
    }
}
