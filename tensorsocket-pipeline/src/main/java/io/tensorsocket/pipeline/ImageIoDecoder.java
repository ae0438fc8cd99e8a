package io.tensorsocket.pipeline;

import java.awt.image.BufferedImage;
import java.awt.image.DataBufferByte;
import java.awt.image.PixelInterleavedSampleModel;
import java.awt.image.Raster;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import javax.imageio.ImageIO;
import javax.imageio.stream.ImageInputStream;
import javax.imageio.stream.MemoryCacheImageInputStream;

/**
 * Decodes any format the JDK's {@link ImageIO} reads (JPEG, PNG, BMP, GIF, ...) into RGB. Alpha is
 * dropped and gray is replicated, as PIL's {@code convert("RGB")} does, so every image has three channels.
 * Portable but slower than {@link TurboJpegDecoder} for JPEG.
 */
public final class ImageIoDecoder implements ImageDecoder {
    /** The one instance: ImageIO holds no per-decoder state. */
    public static final ImageIoDecoder INSTANCE = new ImageIoDecoder();

    static {
        // A disk cache would make every decode create and delete a temporary file.
        ImageIO.setUseCache(false);
    }

    private ImageIoDecoder() {}

    @Override
    public String name() {
        return "imageio";
    }

    @Override
    public Worker newWorker() {
        return new ImageIoWorker();
    }

    @Override
    public String toString() {
        return name();
    }

    private static final class ImageIoWorker implements Worker {
        private byte[] row = new byte[0];
        private int[] argb = new int[0];

        @Override
        public void decode(MemorySegment encoded, RgbImage into) throws IOException {
            // ImageIO.read closes the stream itself; the stream holds only heap memory, so no try-with-resources.
            ImageInputStream in = new MemoryCacheImageInputStream(new SegmentInputStream(encoded.asByteBuffer()));
            BufferedImage img = ImageIO.read(in);
            if (img == null) {
                throw new IOException("ImageIO has no reader for this format; use JPEG or PNG files");
            }
            int w = img.getWidth();
            int h = img.getHeight();
            MemorySegment rgb = into.reset(w, h);
            if (row.length < w * 3) {
                row = new byte[w * 3];
            }
            Raster raster = img.getRaster();
            if (isPacked(img, raster, BufferedImage.TYPE_3BYTE_BGR, 3)) {
                byte[] data = ((DataBufferByte) raster.getDataBuffer()).getData();
                for (int y = 0; y < h; y++) {
                    int src = y * w * 3;
                    for (int i = 0; i < w * 3; i += 3) {
                        row[i] = data[src + i + 2];
                        row[i + 1] = data[src + i + 1];
                        row[i + 2] = data[src + i];
                    }
                    MemorySegment.copy(row, 0, rgb, ValueLayout.JAVA_BYTE, (long) y * w * 3, w * 3);
                }
            } else if (isPacked(img, raster, BufferedImage.TYPE_BYTE_GRAY, 1)) {
                byte[] data = ((DataBufferByte) raster.getDataBuffer()).getData();
                for (int y = 0; y < h; y++) {
                    for (int x = 0, src = y * w; x < w; x++) {
                        byte g = data[src + x];
                        row[3 * x] = g;
                        row[3 * x + 1] = g;
                        row[3 * x + 2] = g;
                    }
                    MemorySegment.copy(row, 0, rgb, ValueLayout.JAVA_BYTE, (long) y * w * 3, w * 3);
                }
            } else {
                // Palette, 16-bit, alpha, ...: let the colour model do the conversion (slower, but rare).
                if (argb.length < w) {
                    argb = new int[w];
                }
                for (int y = 0; y < h; y++) {
                    img.getRGB(0, y, w, 1, argb, 0, w);
                    for (int x = 0; x < w; x++) {
                        int p = argb[x];
                        row[3 * x] = (byte) (p >> 16);
                        row[3 * x + 1] = (byte) (p >> 8);
                        row[3 * x + 2] = (byte) p;
                    }
                    MemorySegment.copy(row, 0, rgb, ValueLayout.JAVA_BYTE, (long) y * w * 3, w * 3);
                }
            }
        }

        private static boolean isPacked(BufferedImage img, Raster raster, int type, int channels) {
            return img.getType() == type
                    && raster.getParent() == null
                    && raster.getSampleModel() instanceof PixelInterleavedSampleModel sm
                    && sm.getPixelStride() == channels
                    && sm.getScanlineStride() == img.getWidth() * channels
                    && raster.getDataBuffer() instanceof DataBufferByte db
                    && db.getOffset() == 0
                    && raster.getSampleModelTranslateX() == 0
                    && raster.getSampleModelTranslateY() == 0;
        }

        @Override
        public void close() {}
    }

    /** Reads a byte buffer without copying it to the heap first. */
    private static final class SegmentInputStream extends InputStream {
        private final ByteBuffer buf;

        SegmentInputStream(ByteBuffer buf) {
            this.buf = buf;
        }

        @Override
        public int read() {
            return buf.hasRemaining() ? buf.get() & 0xFF : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (!buf.hasRemaining()) {
                return -1;
            }
            int n = Math.min(len, buf.remaining());
            buf.get(b, off, n);
            return n;
        }

        @Override
        public int available() {
            return buf.remaining();
        }
    }
}
