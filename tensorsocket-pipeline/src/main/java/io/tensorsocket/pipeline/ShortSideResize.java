package io.tensorsocket.pipeline;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Shrinks a decoded image so that its shorter side is {@code shortSide} pixels, keeping its aspect ratio (the longer
 * side scaled and truncated, as torchvision's {@code Resize(int)} computes it); an image whose shorter side is no
 * longer is left as it is. It is the first step after decoding in a pipeline with {@code --cache-resize}: what the
 * decoded-sample cache keeps, and what the augmentation starts from, cached or not, so that a cached run's bytes
 * equal an uncached run's with the same option.
 *
 * <p>Each output pixel is the average of the source area it covers (a box filter with fractional edge weights), the
 * antialiased shrink: rows are summed vertically into one accumulator row, which is then averaged horizontally. One
 * instance per worker thread: it reuses its accumulator and its output image.
 */
final class ShortSideResize implements AutoCloseable {
    private final int shortSide;
    private final RgbImage out = new RgbImage();
    private float[] rowSums = new float[0];

    /**
     * @throws IllegalArgumentException for a short side below 1
     */
    ShortSideResize(int shortSide) {
        if (shortSide < 1) {
            throw new IllegalArgumentException("a --cache-resize short side of " + shortSide
                    + " pixels; give 1 or more, or leave it out to keep the decoded images at their size");
        }
        this.shortSide = shortSide;
    }

    /** The output size of a {@code width} x {@code height} image: {width, height}. */
    static int[] size(int width, int height, int shortSide) {
        if (Math.min(width, height) <= shortSide) {
            return new int[] {width, height};
        }
        if (width <= height) {
            return new int[] {shortSide, (int) ((long) shortSide * height / width)};
        }
        return new int[] {(int) ((long) shortSide * width / height), shortSide};
    }

    /**
     * {@code in} shrunk to this short side: {@code in} itself where it is no larger, else this instance's output image,
     * valid until the next call.
     */
    RgbImage apply(RgbImage in) {
        int[] size = size(in.width(), in.height(), shortSide);
        if (size[0] == in.width() && size[1] == in.height()) {
            return in;
        }
        int inW = in.width();
        int outW = size[0];
        int outH = size[1];
        MemorySegment src = in.pixels();
        MemorySegment dst = out.reset(outW, outH);
        double sy = (double) in.height() / outH;
        double sx = (double) inW / outW;
        if (rowSums.length < inW * 3) {
            rowSums = new float[inW * 3];
        }
        byte[] srcRow = new byte[inW * 3];
        byte[] dstRow = new byte[outW * 3];
        for (int y = 0; y < outH; y++) {
            double top = y * sy;
            double bottom = Math.min(in.height(), (y + 1) * sy);
            Arrays.fill(rowSums, 0, inW * 3, 0f);
            for (int r = (int) top; r < bottom; r++) {
                float w = (float) (Math.min(bottom, r + 1) - Math.max(top, r));
                MemorySegment.copy(src, ValueLayout.JAVA_BYTE, (long) r * inW * 3, srcRow, 0, inW * 3);
                for (int i = 0; i < inW * 3; i++) {
                    rowSums[i] += w * (srcRow[i] & 0xff);
                }
            }
            float rowsArea = (float) (bottom - top);
            for (int x = 0; x < outW; x++) {
                double left = x * sx;
                double right = Math.min(inW, (x + 1) * sx);
                float area = rowsArea * (float) (right - left);
                for (int c = 0; c < 3; c++) {
                    float sum = 0f;
                    for (int col = (int) left; col < right; col++) {
                        float w = (float) (Math.min(right, col + 1) - Math.max(left, col));
                        sum += w * rowSums[col * 3 + c];
                    }
                    int v = Math.round(sum / area);
                    dstRow[x * 3 + c] = (byte) Math.max(0, Math.min(255, v));
                }
            }
            MemorySegment.copy(dstRow, 0, dst, ValueLayout.JAVA_BYTE, (long) y * outW * 3, outW * 3);
        }
        return out;
    }

    int shortSide() {
        return shortSide;
    }

    @Override
    public void close() {
        out.close();
    }
}
