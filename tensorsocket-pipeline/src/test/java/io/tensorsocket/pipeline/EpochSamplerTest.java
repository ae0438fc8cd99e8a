package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class EpochSamplerTest {

    @Test
    void shuffledOrderIsAPermutationFixedBySeedAndEpoch() {
        EpochSampler s = new EpochSampler(1000, 32, true, false, 7);
        int[] e0 = s.order(0);
        assertArrayEquals(e0, new EpochSampler(1000, 32, true, false, 7).order(0), "same seed and epoch, same order");
        assertFalse(Arrays.equals(e0, s.order(1)), "a new epoch reshuffles");
        assertFalse(
                Arrays.equals(e0, new EpochSampler(1000, 32, true, false, 8).order(0)), "another seed, another order");
        int[] sorted = e0.clone();
        Arrays.sort(sorted);
        for (int i = 0; i < sorted.length; i++) {
            assertEquals(i, sorted[i]);
        }
    }

    @Test
    void unshuffledOrderIsSequential() {
        int[] order = new EpochSampler(5, 2, false, false, 1).order(3);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4}, order);
    }

    @Test
    void dropLastLeavesOutThePartialBatch() {
        EpochSampler keep = new EpochSampler(10, 4, true, false, 1);
        EpochSampler drop = new EpochSampler(10, 4, true, true, 1);
        assertEquals(10, keep.samplesPerEpoch());
        assertEquals(3, keep.batchesPerEpoch());
        assertEquals(8, drop.samplesPerEpoch());
        assertEquals(2, drop.batchesPerEpoch());
        assertArrayEquals(
                Arrays.copyOf(keep.order(2), 8), drop.order(2), "drop-last drops the tail of the same shuffle");
    }

    @Test
    void impossibleSettingsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new EpochSampler(0, 4, true, false, 1));
        assertThrows(IllegalArgumentException.class, () -> new EpochSampler(3, 4, true, true, 1));
        assertThrows(IllegalArgumentException.class, () -> new EpochSampler(3, 0, true, false, 1));
    }
}
