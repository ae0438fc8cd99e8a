package io.tensorsocket.pipeline;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Applies a {@link SampleGeometry} to a decoded image for one worker thread: crop, resize (bilinear,
 * antialiased when shrinking, as torchvision and PIL do), flip, scale to [0, 1] and normalize, in one
 * pass, writing one output row at a time straight into the sample's region of the slot.
 *
 * <p>The arithmetic runs on this worker's heap arrays only; memory segments are touched by bulk copies
 * (a source row in, an output row out). The hot loops therefore see one array type whatever kind of
 * segment the sink hands out (mapped arena, native, heap), which keeps the JIT's type profile clean:
 * the same loop fed mixed segment kinds ran 3-5x slower.
 */
final class Resampler {
    private final OutputFormat format;
    private final float[] table;
    private final Taps tx = new Taps();
    private final Taps ty = new Taps();
    private byte[] srcRow = new byte[0];
    private float[] acc = new float[0];
    private float[] outFloat = new float[0];
    private byte[] outByte = new byte[0];

    Resampler(TransformPipeline pipeline) {
        this.format = pipeline.format();
        this.table = pipeline.floatTable();
    }

    /** Writes the transformed {@code image} into {@code out}, which holds exactly one output sample. */
    void run(RgbImage image, SampleGeometry g, MemorySegment out) {
        int w = g.x().size();
        int h = g.y().size();
        tx.compute(g.x(), image.width());
        ty.compute(g.y(), image.height());
        int x0 = tx.lo;
        int rowLen = (tx.hi - x0) * 3;
        if (srcRow.length < rowLen) {
            srcRow = new byte[rowLen];
            acc = new float[rowLen];
        }
        if (outFloat.length < 3 * w) {
            outFloat = new float[3 * w];
            outByte = new byte[3 * w];
        }
        MemorySegment pixels = image.pixels();
        long stride = (long) image.width() * 3;
        for (int oy = 0; oy < h; oy++) {
            int taps = ty.count[oy];
            if (taps > 0) {
                verticalPass(pixels, stride, oy, taps, x0 * 3L, rowLen);
            }
            horizontalPass(w, taps > 0, g.flipX(), x0);
            store(out, oy, w, h);
        }
    }

    /** acc = weighted sum of the source rows output row {@code oy} draws from, over the columns in use. */
    private void verticalPass(MemorySegment pixels, long stride, int oy, int taps, long colOffset, int rowLen) {
        float[] acc = this.acc;
        byte[] src = this.srcRow;
        Arrays.fill(acc, 0, rowLen, 0f);
        int first = ty.start[oy];
        int wBase = oy * ty.maxTaps;
        for (int k = 0; k < taps; k++) {
            float wk = ty.weights[wBase + k];
            MemorySegment.copy(pixels, ValueLayout.JAVA_BYTE, (first + k) * stride + colOffset, src, 0, rowLen);
            for (int i = 0; i < rowLen; i++) {
                acc[i] += wk * (src[i] & 0xFF);
            }
        }
    }

    /** One output row into outFloat (CHW planes) or outByte (HWC), mirrored if asked. */
    private void horizontalPass(int w, boolean rowHasData, boolean flip, int x0) {
        float[] acc = this.acc;
        float[] table = this.table;
        float[] of = this.outFloat;
        byte[] ob = this.outByte;
        int[] start = tx.start;
        int[] count = tx.count;
        float[] weights = tx.weights;
        int maxTaps = tx.maxTaps;
        boolean floats = format == OutputFormat.FLOAT32_CHW;
        for (int ox = 0; ox < w; ox++) {
            int r = 0;
            int gr = 0;
            int b = 0;
            int taps = count[ox];
            if (rowHasData && taps > 0) {
                float fr = 0;
                float fg = 0;
                float fb = 0;
                int p = (start[ox] - x0) * 3;
                int wi = ox * maxTaps;
                for (int k = 0; k < taps; k++, p += 3) {
                    float wk = weights[wi + k];
                    fr += wk * acc[p];
                    fg += wk * acc[p + 1];
                    fb += wk * acc[p + 2];
                }
                r = clamp8(fr);
                gr = clamp8(fg);
                b = clamp8(fb);
            }
            int d = flip ? w - 1 - ox : ox;
            if (floats) {
                of[d] = table[r];
                of[w + d] = table[256 + gr];
                of[2 * w + d] = table[512 + b];
            } else {
                ob[3 * d] = (byte) r;
                ob[3 * d + 1] = (byte) gr;
                ob[3 * d + 2] = (byte) b;
            }
        }
    }

    private void store(MemorySegment out, int oy, int w, int h) {
        if (format == OutputFormat.FLOAT32_CHW) {
            long plane = (long) h * w * 4;
            long row = (long) oy * w * 4;
            for (int c = 0; c < 3; c++) {
                MemorySegment.copy(outFloat, c * w, out, ValueLayout.JAVA_FLOAT_UNALIGNED, c * plane + row, w);
            }
        } else {
            MemorySegment.copy(outByte, 0, out, ValueLayout.JAVA_BYTE, (long) oy * w * 3, w * 3);
        }
    }

    private static int clamp8(float v) {
        int i = (int) (v + 0.5f);
        return i < 0 ? 0 : Math.min(i, 255);
    }

    /**
     * Filter taps of one axis, as PIL's {@code precompute_coeffs}: a triangle filter whose support
     * widens with the shrink factor (antialiasing), taps clipped to the clamp window and renormalized.
     */
    static final class Taps {
        int[] start = new int[0];
        int[] count = new int[0];
        float[] weights = new float[0];
        int maxTaps;
        /** Source indices in use by any output pixel: {@code [lo, hi)}. */
        int lo;

        int hi;

        void compute(SampleGeometry.Axis a, int sourceSize) {
            int n = a.size();
            double scale = a.scale();
            double filterScale = Math.max(scale, 1.0);
            double support = filterScale;
            int clampLo = Math.max(0, (int) Math.ceil(a.clampLo() - 1e-6));
            int clampHi = Math.min(sourceSize, (int) Math.floor(a.clampHi() + 1e-6));
            if (clampHi <= clampLo) {
                clampLo = Math.min(Math.max(clampLo, 0), sourceSize - 1);
                clampHi = clampLo + 1;
            }
            maxTaps = (int) Math.ceil(2 * support) + 2;
            if (start.length < n) {
                start = new int[n];
                count = new int[n];
            }
            if (weights.length < n * maxTaps) {
                weights = new float[n * maxTaps];
            }
            lo = Integer.MAX_VALUE;
            hi = Integer.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                double center = a.offset() + (i + 0.5) * scale;
                if (center < a.contentLo() || center >= a.contentHi()) {
                    count[i] = 0; // padding
                    continue;
                }
                int from = Math.max((int) Math.floor(center - support + 0.5), clampLo);
                int to = Math.min((int) Math.floor(center + support + 0.5), clampHi);
                if (to <= from) {
                    from = Math.min(Math.max((int) Math.floor(center), clampLo), clampHi - 1);
                    to = from + 1;
                }
                int wi = i * maxTaps;
                double sum = 0;
                for (int x = from; x < to; x++) {
                    double t = Math.abs((x - center + 0.5) / filterScale);
                    double wgt = t < 1 ? 1 - t : 0;
                    weights[wi + x - from] = (float) wgt;
                    sum += wgt;
                }
                int taps = to - from;
                for (int k = 0; k < taps; k++) {
                    weights[wi + k] = sum > 0 ? (float) (weights[wi + k] / sum) : 1f / taps;
                }
                start[i] = from;
                count[i] = taps;
                lo = Math.min(lo, from);
                hi = Math.max(hi, to);
            }
            if (lo > hi) { // every output pixel is padding
                lo = 0;
                hi = 0;
            }
        }
    }
}
