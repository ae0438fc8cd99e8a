package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.awt.image.BufferedImage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ResamplerTest {

    /** Runs {@code pipeline} on {@code img} with a fixed random stream and returns the output bytes. */
    private static byte[] apply(TransformPipeline pipeline, BufferedImage img, long seed) {
        try (RgbImage rgb = TestImages.toRgbImage(img);
                Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(pipeline.spec("image").sampleBytes());
            SampleGeometry g = pipeline.plan(rgb.width(), rgb.height(), new SplittableRandom(seed));
            new Resampler(pipeline).run(rgb, g, out);
            return out.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static float[] floats(byte[] bytes) {
        return MemorySegment.ofArray(bytes).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
    }

    @Test
    void fullSizeCropIsTheIdentity() {
        BufferedImage img = TestImages.pattern(37, 23, 1);
        byte[] out = apply(TransformPipeline.of(List.of(Transform.centerCrop(23, 37)), OutputFormat.UINT8_HWC), img, 0);
        assertArrayEquals(TestImages.rgb(img), out);
    }

    @Test
    void centerCropTakesTheMiddle() {
        BufferedImage img = TestImages.pattern(40, 30, 3);
        byte[] out = apply(TransformPipeline.of(List.of(Transform.centerCrop(10, 12)), OutputFormat.UINT8_HWC), img, 0);
        assertArrayEquals(
                TestImages.rgb(img.getSubimage(14, 10, 12, 10)), out, "offsets round((40-12)/2)=14, (30-10)/2=10");
    }

    @Test
    void horizontalFlipMirrorsEachRow() {
        BufferedImage img = TestImages.pattern(16, 9, 5);
        byte[] out = apply(
                TransformPipeline.of(
                        List.of(Transform.randomHorizontalFlip(1.0), Transform.centerCrop(9, 16)),
                        OutputFormat.UINT8_HWC),
                img,
                0);
        byte[] src = TestImages.rgb(img);
        for (int y = 0; y < 9; y++) {
            for (int x = 0; x < 16; x++) {
                for (int c = 0; c < 3; c++) {
                    assertEquals(src[(y * 16 + (15 - x)) * 3 + c], out[(y * 16 + x) * 3 + c], "pixel " + x + "," + y);
                }
            }
        }
        byte[] never = apply(
                TransformPipeline.of(
                        List.of(Transform.randomHorizontalFlip(0.0), Transform.centerCrop(9, 16)),
                        OutputFormat.UINT8_HWC),
                img,
                0);
        assertArrayEquals(src, never);
    }

    @Test
    void flipBeforeAnOffCentreCropCropsTheMirroredImage() {
        // Width 11, crop 4: offset round(3.5) = 4 in the flipped image = columns 3..6 of the original, mirrored.
        BufferedImage img = TestImages.pattern(11, 1, 0);
        byte[] out = apply(
                TransformPipeline.of(
                        List.of(Transform.randomHorizontalFlip(1.0), Transform.centerCrop(1, 4)),
                        OutputFormat.UINT8_HWC),
                img,
                0);
        byte[] src = TestImages.rgb(img);
        for (int x = 0; x < 4; x++) {
            assertEquals(src[(6 - x) * 3], out[x * 3]);
        }
    }

    @Test
    void normalizeGivesTorchvisionValuesInChwOrder() {
        BufferedImage img = TestImages.pattern(5, 4, 9);
        float[] mean = {0.485f, 0.456f, 0.406f};
        float[] std = {0.229f, 0.224f, 0.225f};
        float[] out = floats(apply(
                TransformPipeline.of(List.of(Transform.centerCrop(4, 5), Transform.normalize(mean, std))), img, 0));
        byte[] src = TestImages.rgb(img);
        for (int c = 0; c < 3; c++) {
            for (int y = 0; y < 4; y++) {
                for (int x = 0; x < 5; x++) {
                    float v = (src[(y * 5 + x) * 3 + c] & 0xFF) / 255f;
                    assertEquals((v - mean[c]) / std[c], out[(c * 4 + y) * 5 + x], 0f);
                }
            }
        }
    }

    @Test
    void resizingAConstantImageKeepsItConstant() {
        BufferedImage img = new BufferedImage(50, 30, BufferedImage.TYPE_3BYTE_BGR);
        for (int y = 0; y < 30; y++) {
            for (int x = 0; x < 50; x++) {
                img.setRGB(x, y, 0x336699);
            }
        }
        for (int size : new int[] {7, 24, 90}) {
            byte[] out = apply(
                    TransformPipeline.of(List.of(Transform.randomResizedCrop(size)), OutputFormat.UINT8_HWC),
                    img,
                    size);
            for (int i = 0; i < out.length; i += 3) {
                assertEquals(0x33, out[i] & 0xFF);
                assertEquals(0x66, out[i + 1] & 0xFF);
                assertEquals(0x99, out[i + 2] & 0xFF);
            }
        }
    }

    @Test
    void tapsFollowPilsAntialiasedBilinearWeights() {
        Resampler.Taps t = new Resampler.Taps();
        // Halving: triangle of support 2, weights 1/8, 3/8, 3/8, 1/8 around each output centre.
        t.compute(new SampleGeometry.Axis(4, 0, 2, 0, 8, 0, 8), 8);
        assertEquals(1, t.start[1]);
        assertEquals(4, t.count[1]);
        assertArrayEquals(
                new float[] {0.125f, 0.375f, 0.375f, 0.125f}, Arrays.copyOfRange(t.weights, t.maxTaps, t.maxTaps + 4));
        // Doubling: plain bilinear, 3/4 and 1/4 of the two nearest pixels.
        t.compute(new SampleGeometry.Axis(8, 0, 0.5, 0, 4, 0, 4), 4);
        int i = 3; // centre 1.75: pixels 1 and 2
        float[] w = Arrays.copyOfRange(t.weights, i * t.maxTaps, i * t.maxTaps + t.count[i]);
        float w1 = 0;
        float w2 = 0;
        for (int k = 0; k < t.count[i]; k++) {
            if (t.start[i] + k == 1) {
                w1 = w[k];
            } else if (t.start[i] + k == 2) {
                w2 = w[k];
            }
        }
        assertEquals(0.75f, w1, 1e-6f);
        assertEquals(0.25f, w2, 1e-6f);
    }

    @Test
    void centerCropLargerThanTheImagePadsWithZeros() {
        BufferedImage img = TestImages.pattern(4, 2, 7);
        byte[] out = apply(TransformPipeline.of(List.of(Transform.centerCrop(4, 6)), OutputFormat.UINT8_HWC), img, 0);
        byte[] src = TestImages.rgb(img);
        // Padding: one row on top, one below; one column left, one right.
        for (int y = 0; y < 4; y++) {
            for (int x = 0; x < 6; x++) {
                boolean inside = y >= 1 && y < 3 && x >= 1 && x < 5;
                for (int c = 0; c < 3; c++) {
                    int expected = inside ? src[((y - 1) * 4 + (x - 1)) * 3 + c] & 0xFF : 0;
                    assertEquals(expected, out[(y * 6 + x) * 3 + c] & 0xFF, "pixel " + x + "," + y);
                }
            }
        }
    }
}
