package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DecoderTest {
    @TempDir
    Path dir;

    private static byte[] decode(ImageDecoder decoder, Path file, int[] size) throws IOException {
        try (ImageFileReader reader = new ImageFileReader(decoder)) {
            RgbImage img = reader.read(file);
            size[0] = img.width();
            size[1] = img.height();
            return img.pixels().toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static void assumeTurbo() {
        assumeTrue(
                TurboJpegDecoder.isAvailable(),
                "libturbojpeg.so.0 is not installed (Debian/Ubuntu: apt-get install libturbojpeg0);"
                        + " skipping the TurboJPEG comparison");
    }

    @Test
    void turboJpegAndImageIoDecodeNearIdentically() throws IOException {
        assumeTurbo();
        Path file = dir.resolve("photo.jpg");
        SyntheticImages.writeJpeg(SyntheticImages.photoLike(500, 375, 11), file, 0.9f);
        int[] turboSize = new int[2];
        int[] javaSize = new int[2];
        byte[] turbo = decode(TurboJpegDecoder.load(), file, turboSize);
        byte[] java = decode(ImageIoDecoder.INSTANCE, file, javaSize);
        assertArrayEquals(new int[] {500, 375}, turboSize);
        assertArrayEquals(turboSize, javaSize);
        long sum = 0;
        int max = 0;
        for (int i = 0; i < turbo.length; i++) {
            int d = Math.abs((turbo[i] & 0xFF) - (java[i] & 0xFF));
            sum += d;
            max = Math.max(max, d);
        }
        double mean = (double) sum / turbo.length;
        assertTrue(mean < 2.0, "mean absolute difference " + mean + " levels (max " + max + ")");
    }

    @Test
    void grayJpegComesOutAsThreeEqualChannels() throws IOException {
        BufferedImage gray = new BufferedImage(33, 17, BufferedImage.TYPE_BYTE_GRAY);
        gray.getGraphics().drawImage(SyntheticImages.photoLike(33, 17, 2), 0, 0, null);
        Path file = dir.resolve("gray.jpg");
        SyntheticImages.writeJpeg(gray, file, 0.95f);
        ImageDecoder[] decoders = TurboJpegDecoder.isAvailable()
                ? new ImageDecoder[] {ImageIoDecoder.INSTANCE, TurboJpegDecoder.load()}
                : new ImageDecoder[] {ImageIoDecoder.INSTANCE};
        for (ImageDecoder d : decoders) {
            int[] size = new int[2];
            byte[] px = decode(d, file, size);
            assertArrayEquals(new int[] {33, 17}, size, d.name());
            for (int i = 0; i < px.length; i += 3) {
                assertEquals(px[i], px[i + 1], d.name());
                assertEquals(px[i], px[i + 2], d.name());
            }
        }
    }

    @Test
    void pngDecodesLosslesslyWhateverJpegDecoderIsChosen() throws IOException {
        BufferedImage img = TestImages.pattern(41, 29, 4);
        Path file = dir.resolve("pattern.png");
        SyntheticImages.writePng(img, file);
        int[] size = new int[2];
        assertArrayEquals(TestImages.rgb(img), decode(Decoders.best(), file, size));
        assertArrayEquals(TestImages.rgb(img), decode(ImageIoDecoder.INSTANCE, file, size));
    }

    @Test
    void pngWithAlphaDropsTheAlphaChannel() throws IOException {
        BufferedImage img = new BufferedImage(3, 2, BufferedImage.TYPE_INT_ARGB);
        img.setRGB(0, 0, 0x80112233);
        img.setRGB(2, 1, 0xFF445566);
        Path file = dir.resolve("alpha.png");
        SyntheticImages.writePng(img, file);
        int[] size = new int[2];
        byte[] px = decode(ImageIoDecoder.INSTANCE, file, size);
        assertArrayEquals(new byte[] {0x11, 0x22, 0x33}, Arrays.copyOfRange(px, 0, 3));
        assertArrayEquals(new byte[] {0x44, 0x55, 0x66}, Arrays.copyOfRange(px, 15, 18));
    }

    @Test
    void corruptFilesFailWithAnIoException() throws IOException {
        Path notJpeg = dir.resolve("broken.jpg");
        Files.write(notJpeg, new byte[] {(byte) 0xFF, (byte) 0xD8, (byte) 0xFF, 1, 2, 3});
        Path text = dir.resolve("text.png");
        Files.writeString(text, "not an image");
        int[] size = new int[2];
        assertThrows(IOException.class, () -> decode(ImageIoDecoder.INSTANCE, text, size));
        assertThrows(IOException.class, () -> decode(ImageIoDecoder.INSTANCE, notJpeg, size));
        if (TurboJpegDecoder.isAvailable()) {
            IOException e = assertThrows(IOException.class, () -> decode(TurboJpegDecoder.load(), notJpeg, size));
            assertTrue(e.getMessage().contains("TurboJPEG"), e.getMessage());
        }
    }

    @Test
    void decodersAreChosenByName() {
        assertEquals("imageio", Decoders.named("imageio").name());
        assertTrue(Decoders.named("auto").name().equals(TurboJpegDecoder.isAvailable() ? "turbojpeg" : "imageio"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Decoders.named("libpng"));
        assertTrue(e.getMessage().contains("turbojpeg"), e.getMessage());
    }

    @Test
    void workerBuffersGrowAndAreReused() throws IOException {
        Path small = dir.resolve("small.jpg");
        Path big = dir.resolve("big.jpg");
        SyntheticImages.writeJpeg(SyntheticImages.photoLike(40, 30, 1), small, 0.9f);
        SyntheticImages.writeJpeg(SyntheticImages.photoLike(120, 90, 2), big, 0.9f);
        try (ImageFileReader reader = new ImageFileReader(Decoders.best())) {
            var a = reader.read(big).pixels();
            var b = reader.read(small).pixels();
            assertEquals(a.address(), b.address(), "a smaller image reuses the buffer");
            assertEquals(40 * 30 * 3, b.byteSize());
        }
    }
}
