package io.tensorsocket.source;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class SyntheticSpecTest {

    @Test
    void parsesAndFormatsItsOwnText() {
        SyntheticSpec s = SyntheticSpec.parse("samples=100,shape=3x32x32,dtype=bf16,seed=-4,classes=7");
        assertEquals(100, s.samples());
        assertArrayEquals(new long[] {3, 32, 32}, s.shape());
        assertEquals(DType.BFLOAT16, s.dtype());
        assertEquals(s, SyntheticSpec.parse(s.format()));
        assertTrue(s.format().startsWith(SyntheticSpec.PREFIX));
    }

    @Test
    void badParametersSayWhatIsWrong() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SyntheticSpec.parse("shape=3"))
                .getMessage()
                .contains("samples=N"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SyntheticSpec.parse("samples=3,colour=red"))
                .getMessage()
                .contains("unknown synthetic parameter 'colour'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SyntheticSpec.parse("samples=x"))
                .getMessage()
                .contains("non-number"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SyntheticSpec.parse("samples=3,dtype=complex"))
                .getMessage()
                .contains("unknown dtype"));
        assertThrows(IllegalArgumentException.class, () -> SyntheticSpec.parse("samples=0"));
        for (String shape : new String[] {"3x0x2", "3x-1", "3xx2", "3x", "", "3x2.5", "a"}) {
            assertEquals(
                    "a shape is its dimensions, each at least 1, joined by x, such as 3x32x32, not '" + shape + "'",
                    assertThrows(IllegalArgumentException.class, () -> SyntheticSpec.parse("samples=3,shape=" + shape))
                            .getMessage(),
                    shape);
        }
        assertArrayEquals(new long[] {1, 28, 28}, SyntheticSpec.parseShape("1x28x28"));
    }

    @Test
    void orderIsAPermutationFixedBySeedAndEpoch() {
        SyntheticSpec s = SyntheticSpec.parse("samples=1000,seed=9");
        int[] e0 = s.order(0);
        assertArrayEquals(e0, SyntheticSpec.parse("samples=1000,seed=9").order(0));
        assertFalse(Arrays.equals(e0, s.order(1)), "reshuffled per epoch");
        int[] sorted = e0.clone();
        Arrays.sort(sorted);
        for (int i = 0; i < sorted.length; i++) {
            assertEquals(i, sorted[i]);
        }
    }

    @Test
    void contentIsAFunctionOfSeedAndId() {
        SyntheticSpec s = SyntheticSpec.parse("samples=10,shape=17,dtype=int16,seed=1");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment x = a.allocate(s.sampleBytes());
            MemorySegment y = a.allocate(s.sampleBytes());
            s.fill(3, x);
            s.fill(3, y);
            assertEquals(-1, x.mismatch(y));
            s.fill(4, y);
            assertNotEquals(-1, x.mismatch(y));
        }
    }
}
