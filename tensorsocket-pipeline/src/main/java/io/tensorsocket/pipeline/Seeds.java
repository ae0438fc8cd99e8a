package io.tensorsocket.pipeline;

import java.util.SplittableRandom;

/**
 * Derives every random choice from (seed, epoch, sample id) alone, so output does not depend on how
 * many threads there are or which thread handles which sample.
 */
public final class Seeds {
    private Seeds() {}

    /** The random stream for sample {@code id}'s augmentation in {@code epoch}. */
    public static SplittableRandom forSample(long seed, long epoch, long id) {
        return new SplittableRandom(mix(mix(seed, epoch), id ^ 0x6A09E667F3BCC909L));
    }

    /** The random stream for epoch {@code epoch}'s shuffle. */
    public static SplittableRandom forEpoch(long seed, long epoch) {
        return new SplittableRandom(mix(seed ^ 0xBB67AE8584CAA73BL, epoch));
    }

    /** Combines two values into a well-spread 64-bit seed (SplitMix64's finalizer). */
    static long mix(long a, long b) {
        long z = a * 0x9E3779B97F4A7C15L + b;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
