package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.arena.ArenaLayout;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.Test;

class DataModelTest {

    @Test
    void dtypesHaveStableCodesAndParseAsUsersWriteThem() {
        for (DType t : DType.values()) {
            assertEquals(t, DType.fromCode(t.code()));
            assertEquals(t, DType.parse(t.lowerName()));
        }
        assertEquals(DType.FLOAT16, DType.parse("half"));
        assertEquals(DType.BFLOAT16, DType.parse("BF16"));
        assertEquals(4, DType.FLOAT32.byteSize());
        assertThrows(IllegalArgumentException.class, () -> DType.fromCode(0));
    }

    @Test
    void typedAccessorsReadLittleEndianValues() {
        Tensor f = Tensor.ofFloats(new float[] {1.5f, -2f, 3.25f, 0f}, 2, 2);
        assertEquals(-2f, f.getFloat(1));
        assertEquals(3.25, f.getDouble(2));
        assertArrayEquals(new long[] {2}, f.sampleShape());
        assertEquals(8, f.sampleBytes());
        assertThrows(IndexOutOfBoundsException.class, () -> f.getFloat(4));
        assertThrows(UnsupportedOperationException.class, () -> f.getLong(0));

        Tensor u8 = Tensor.ofBytes(DType.UINT8, new byte[] {(byte) 200, 1}, 2);
        assertEquals(200, u8.getLong(0), "uint8 reads unsigned");
        Tensor i8 = Tensor.ofBytes(DType.INT8, new byte[] {(byte) 200, 1}, 2);
        assertEquals(-56, i8.getLong(0));

        short half = Float.floatToFloat16(0.5f);
        Tensor h = Tensor.of(DType.FLOAT16, new long[] {1}, MemorySegment.ofArray(new short[] {half}));
        assertEquals(0.5f, h.getFloat(0));
        short bf = (short) (Float.floatToRawIntBits(-3f) >>> 16);
        Tensor b = Tensor.of(DType.BFLOAT16, new long[] {1}, MemorySegment.ofArray(new short[] {bf}));
        assertEquals(-3f, b.getFloat(0));

        Tensor sliced = f.slice(1, 2);
        assertArrayEquals(new float[] {3.25f, 0f}, sliced.toFloatArray());
    }

    @Test
    void tensorsCheckTheirSize() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Tensor.of(DType.FLOAT32, new long[] {2, 3}, MemorySegment.ofArray(new float[5])));
        assertTrue(e.getMessage().contains("needs 24 bytes"), e.getMessage());
    }

    @Test
    void batchesNeedAConsistentBatchDimension() {
        Tensor x = Tensor.ofFloats(new float[6], 3, 2);
        Tensor y = Tensor.ofLongs(new long[2], 2);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Batch.of("x", x, "y", y))
                .getMessage()
                .contains("first dimension"));
        Batch ok = Batch.of("x", x, "y", Tensor.ofLongs(new long[3], 3));
        assertEquals(3, ok.size());
        assertEquals(List.of("x", "y"), ok.names());
        assertThrows(NoSuchElementException.class, () -> ok.tensor("z"));
        assertThrows(IllegalArgumentException.class, () -> Batch.of("x", x, "x", x));
    }

    @Test
    void layoutsCheckBatchesAgainstTheirSpecs() {
        BatchLayout layout =
                new BatchLayout(List.of(TensorSpec.of("x", DType.FLOAT32, 2), TensorSpec.of("y", DType.INT64)), 4);
        layout.check(Batch.of("x", Tensor.ofFloats(new float[8], 4, 2), "y", Tensor.ofLongs(new long[4], 4)));
        assertTrue(assertThrows(
                        IllegalArgumentException.class,
                        () -> layout.check(Batch.of(
                                "x", Tensor.ofFloats(new float[10], 5, 2), "y", Tensor.ofLongs(new long[5], 5))))
                .getMessage()
                .contains("1 to 4"));
        assertTrue(assertThrows(
                        IllegalArgumentException.class,
                        () -> layout.check(Batch.of(
                                "x", Tensor.ofFloats(new float[12], 4, 3), "y", Tensor.ofLongs(new long[4], 4))))
                .getMessage()
                .contains("per sample"));
        assertThrows(IllegalArgumentException.class, () -> new BatchLayout(List.of(TensorSpec.of("x", DType.BOOL)), 0));
    }

    @Test
    void arenaSlotsArePageAlignedAndRegionsCacheLineAligned() {
        BatchLayout b = new BatchLayout(
                List.of(TensorSpec.of("img", DType.UINT8, 3, 5, 5), TensorSpec.of("y", DType.INT64)), 3);
        ArenaLayout a = ArenaLayout.of(b, 4);
        assertEquals(0, a.regionOffset(0));
        assertEquals(256, a.regionOffset(1), "225 bytes of images, then the labels at the next 64-byte boundary");
        assertEquals(4096, a.slotBytes());
        assertEquals(4096 + 4 * 4096, a.fileBytes());
        assertEquals(4096 + 2 * 4096, a.slotOffset(2));
        assertEquals(5, ArenaLayout.slotsThatFit(b, 6 * 4096));
    }
}
