package io.tensorsocket.pipeline;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/** Small images with known pixels, and folders of them. */
final class TestImages {
    private TestImages() {}

    /** Pixel (x, y) = (r, g, b) = (x * 7 + seed, y * 5 + seed, (x + y) * 3) mod 256: every pixel distinct enough to spot shifts. */
    static BufferedImage pattern(int width, int height, int seed) {
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_3BYTE_BGR);
        for (int y = 0; y < height; y++) {
            for (int x = 0; x < width; x++) {
                int r = (x * 7 + seed) & 0xFF;
                int g = (y * 5 + seed) & 0xFF;
                int b = ((x + y) * 3) & 0xFF;
                img.setRGB(x, y, (r << 16) | (g << 8) | b);
            }
        }
        return img;
    }

    /** The RGB bytes of {@code img}, row-major. */
    static byte[] rgb(BufferedImage img) {
        byte[] out = new byte[img.getWidth() * img.getHeight() * 3];
        int i = 0;
        for (int y = 0; y < img.getHeight(); y++) {
            for (int x = 0; x < img.getWidth(); x++) {
                int p = img.getRGB(x, y);
                out[i++] = (byte) (p >> 16);
                out[i++] = (byte) (p >> 8);
                out[i++] = (byte) p;
            }
        }
        return out;
    }

    /** An {@link RgbImage} holding {@code img}'s pixels. */
    static RgbImage toRgbImage(BufferedImage img) {
        RgbImage out = new RgbImage();
        MemorySegment px = out.reset(img.getWidth(), img.getHeight());
        MemorySegment.copy(rgb(img), 0, px, ValueLayout.JAVA_BYTE, 0, (int) px.byteSize());
        return out;
    }

    /**
     * {@code root/<class>/img_i.{jpg|png}}: {@code perClass} images per class, alternating JPEG and PNG
     * if {@code mixed}, sizes varying so resizing and cropping differ per sample.
     */
    static Path folder(Path root, String[] classes, int perClass, boolean mixed) throws IOException {
        int n = 0;
        for (String c : classes) {
            Path dir = Files.createDirectories(root.resolve(c));
            for (int i = 0; i < perClass; i++, n++) {
                BufferedImage img = SyntheticImages.photoLike(60 + 7 * (n % 5), 48 + 5 * (n % 3), n);
                if (mixed && n % 2 == 1) {
                    SyntheticImages.writePng(img, dir.resolve(String.format("img_%02d.png", i)));
                } else {
                    SyntheticImages.writeJpeg(img, dir.resolve(String.format("img_%02d.jpg", i)), 0.9f);
                }
            }
        }
        return root;
    }
}
