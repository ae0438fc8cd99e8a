package io.tensorsocket.pipeline;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import javax.imageio.IIOImage;
import javax.imageio.ImageIO;
import javax.imageio.ImageWriteParam;
import javax.imageio.ImageWriter;
import javax.imageio.stream.ImageOutputStream;

/**
 * Photo-like test images: smooth gradients, sensor-like noise and a few shapes, so JPEG files come out
 * at realistic sizes (flat synthetic images compress far better than photos and decode faster).
 */
public final class SyntheticImages {
    private SyntheticImages() {}

    /** A {@code width} x {@code height} RGB image drawn from {@code seed}. */
    public static BufferedImage photoLike(int width, int height, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_3BYTE_BGR);
        float[] c0 = {r.nextFloat() * 255, r.nextFloat() * 255, r.nextFloat() * 255};
        float[] cx = {r.nextFloat() * 200 - 100, r.nextFloat() * 200 - 100, r.nextFloat() * 200 - 100};
        float[] cy = {r.nextFloat() * 200 - 100, r.nextFloat() * 200 - 100, r.nextFloat() * 200 - 100};
        double fx = 2 + r.nextDouble() * 6;
        double fy = 2 + r.nextDouble() * 6;
        for (int y = 0; y < height; y++) {
            for (int x = 0; x < width; x++) {
                double u = (double) x / width;
                double v = (double) y / height;
                double wave = 25 * Math.sin(u * fx * Math.PI) * Math.cos(v * fy * Math.PI);
                int rgb = 0;
                for (int c = 0; c < 3; c++) {
                    double val = c0[c] + cx[c] * u + cy[c] * v + wave + r.nextGaussian() * 9;
                    rgb = (rgb << 8) | (int) Math.max(0, Math.min(255, val));
                }
                img.setRGB(x, y, rgb);
            }
        }
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        for (int i = 0; i < 6; i++) {
            g.setColor(new Color(r.nextInt(256), r.nextInt(256), r.nextInt(256), 96 + r.nextInt(160)));
            int w = 20 + r.nextInt(width / 3);
            int h = 20 + r.nextInt(height / 3);
            int x = r.nextInt(width - w / 2);
            int y = r.nextInt(height - h / 2);
            switch (i % 3) {
                case 0 -> g.fillOval(x, y, w, h);
                case 1 -> g.fillRect(x, y, w, h);
                default -> {
                    g.setStroke(new BasicStroke(2 + r.nextInt(8)));
                    g.drawLine(x, y, x + w, y + h);
                }
            }
        }
        g.dispose();
        return img;
    }

    /** Writes {@code img} as a baseline JPEG of {@code quality} (0 to 1; libjpeg's 75 is 0.75). */
    public static void writeJpeg(BufferedImage img, Path file, float quality) throws IOException {
        ImageWriter writer = ImageIO.getImageWritersByFormatName("jpeg").next();
        try (ImageOutputStream out = ImageIO.createImageOutputStream(Files.newOutputStream(file))) {
            writer.setOutput(out);
            ImageWriteParam p = writer.getDefaultWriteParam();
            p.setCompressionMode(ImageWriteParam.MODE_EXPLICIT);
            p.setCompressionQuality(quality);
            writer.write(null, new IIOImage(img, null, null), p);
        } finally {
            writer.dispose();
        }
    }

    /** Writes {@code img} as PNG. */
    public static void writePng(BufferedImage img, Path file) throws IOException {
        if (!ImageIO.write(img, "png", file.toFile())) {
            throw new IOException("no PNG writer in this JDK");
        }
    }

    /**
     * Fills {@code root} with {@code count} photo-like JPEGs of {@code width} x {@code height} spread over
     * {@code classes} class folders, unless a previous call already did (so benchmarks reuse them).
     */
    public static Path jpegFolder(Path root, int count, int classes, int width, int height) throws IOException {
        Path done = root.resolve(".complete-" + count + "-" + classes + "-" + width + "x" + height);
        if (Files.exists(done)) {
            return root;
        }
        for (int i = 0; i < count; i++) {
            Path dir = root.resolve(String.format("class_%02d", i % classes));
            Files.createDirectories(dir);
            writeJpeg(photoLike(width, height, i), dir.resolve(String.format("img_%05d.jpg", i)), 0.9f);
        }
        Files.createFile(done);
        return root;
    }
}
