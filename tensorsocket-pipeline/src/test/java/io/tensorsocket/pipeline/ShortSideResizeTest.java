package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The shrink to a short side that --cache-resize puts before the cache: its sizes, and what each pixel averages. */
class ShortSideResizeTest {

    private static RgbImage image(int width, int height, int[] rgbOf) {
        RgbImage img = new RgbImage();
        MemorySegment px = img.reset(width, height);
        for (int y = 0; y < height; y++) {
            for (int x = 0; x < width; x++) {
                int v = rgbOf[(y * width + x) % rgbOf.length];
                for (int c = 0; c < 3; c++) {
                    px.set(ValueLayout.JAVA_BYTE, ((long) y * width + x) * 3 + c, (byte) (v + c));
                }
            }
        }
        return img;
    }

    private static int at(RgbImage img, int x, int y, int c) {
        return img.pixels().get(ValueLayout.JAVA_BYTE, ((long) y * img.width() + x) * 3 + c) & 0xff;
    }

    @Test
    void theShorterSideBecomesTheGivenOneAndTheLongerIsScaledAndTruncatedAsTorchvisionDoes() {
        assertArrayEquals(new int[] {341, 256}, ShortSideResize.size(500, 375, 256));
        assertArrayEquals(new int[] {256, 341}, ShortSideResize.size(375, 500, 256));
        assertArrayEquals(new int[] {64, 64}, ShortSideResize.size(100, 100, 64));
        assertArrayEquals(new int[] {200, 100}, ShortSideResize.size(200, 100, 100), "no shorter than asked: kept");
        assertArrayEquals(new int[] {50, 80}, ShortSideResize.size(50, 80, 64), "smaller: never enlarged");
    }

    @Test
    void anImageNoLargerIsReturnedAsItIs() {
        try (RgbImage small = image(10, 12, new int[] {7});
                ShortSideResize shrink = new ShortSideResize(10)) {
            assertSame(small, shrink.apply(small));
        }
    }

    @Test
    void eachOutputPixelIsTheAverageOfTheAreaItCovers() {
        // 2x2 blocks of 0 and 200 halved: each output pixel averages one block; a 3:2 shrink weights edge pixels
        try (RgbImage checker = image(8, 4, new int[] {0, 200});
                ShortSideResize shrink = new ShortSideResize(2)) {
            RgbImage out = shrink.apply(checker);
            assertEquals(4, out.width());
            assertEquals(2, out.height());
            for (int y = 0; y < 2; y++) {
                for (int x = 0; x < 4; x++) {
                    assertEquals(100, at(out, x, y, 0), "(" + x + "," + y + ")");
                    assertEquals(101, at(out, x, y, 1));
                }
            }
        }
        try (RgbImage uniform = image(9, 6, new int[] {90});
                ShortSideResize shrink = new ShortSideResize(4)) {
            RgbImage out = shrink.apply(uniform);
            assertEquals(6, out.width());
            assertEquals(4, out.height());
            for (int y = 0; y < 4; y++) {
                for (int x = 0; x < 6; x++) {
                    assertEquals(90, at(out, x, y, 0), "a uniform image stays uniform at (" + x + "," + y + ")");
                }
            }
        }
        try (RgbImage ramp = image(3, 3, new int[] {0, 30, 60, 0, 30, 60, 0, 30, 60});
                ShortSideResize shrink = new ShortSideResize(2)) {
            RgbImage out = shrink.apply(ramp);
            // columns 0..1.5 and 1.5..3: (0 + 30 * 0.5) / 1.5 = 10 and (30 * 0.5 + 60) / 1.5 = 50
            assertEquals(10, at(out, 0, 0, 0));
            assertEquals(50, at(out, 1, 1, 0));
        }
    }

    @Test
    void aShortSideBelowOneIsRefusedSayingWhatToGive() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ShortSideResize(0));
        assertTrue(e.getMessage().contains("give 1 or more"), e.getMessage());
    }
}
