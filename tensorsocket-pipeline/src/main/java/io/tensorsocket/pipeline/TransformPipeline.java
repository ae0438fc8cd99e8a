package io.tensorsocket.pipeline;

import io.tensorsocket.TensorSpec;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Collectors;

/**
 * An ordered list of {@link Transform}s plus an {@link OutputFormat}: what torchvision users write as
 * {@code Compose([...])} followed by {@code ToTensor()}. Every sample comes out with the same shape, so
 * the list must end its geometric steps with a fixed size (RandomResizedCrop, CenterCrop or an exact
 * Resize). Normalize, if present, must be the last step.
 *
 * <p>All geometric steps of a sample are fused into one {@link SampleGeometry} and resampled once,
 * bilinear with antialiasing when shrinking (torchvision's default for both PIL images and tensors).
 * A single resize is exact up to rounding; two resizes in a row are fused into one, which differs from
 * resampling twice by a little blur.
 */
public final class TransformPipeline {
    private final List<Transform> steps;
    private final OutputFormat format;
    private final int height;
    private final int width;
    private final Transform.Normalize normalize;

    private TransformPipeline(List<Transform> steps, OutputFormat format) {
        this.steps = List.copyOf(steps);
        this.format = format;
        int h = -1;
        int w = -1;
        boolean fixed = false;
        Transform.Normalize norm = null;
        for (int i = 0; i < this.steps.size(); i++) {
            Transform t = this.steps.get(i);
            if (norm != null) {
                throw new IllegalArgumentException("Normalize must be the last transform, but " + t + " follows it");
            }
            switch (t) {
                case Transform.RandomResizedCrop r -> {
                    h = r.height();
                    w = r.width();
                    fixed = true;
                }
                case Transform.Resize r -> {
                    fixed = !r.keepsAspect();
                    h = r.height();
                    w = r.width();
                }
                case Transform.CenterCrop c -> {
                    h = c.height();
                    w = c.width();
                    fixed = true;
                }
                case Transform.RandomHorizontalFlip f -> {}
                case Transform.Normalize n -> norm = n;
            }
        }
        if (!fixed) {
            throw new IllegalArgumentException(
                    "transforms " + this.steps + " do not give every image the same size; end them with "
                            + "RandomResizedCrop(size), CenterCrop(size) or Resize((height, width)) so images can be batched");
        }
        if (norm != null && format != OutputFormat.FLOAT32_CHW) {
            throw new IllegalArgumentException(
                    "Normalize needs float32 output; drop Normalize for uint8 output and normalize in the consumer");
        }
        this.height = h;
        this.width = w;
        this.normalize = norm;
    }

    /** The transforms in order, written as floats in CHW layout. */
    public static TransformPipeline of(List<Transform> steps) {
        return new TransformPipeline(steps, OutputFormat.FLOAT32_CHW);
    }

    /** The transforms in order, written in {@code format}. */
    public static TransformPipeline of(List<Transform> steps, OutputFormat format) {
        return new TransformPipeline(steps, format);
    }

    /**
     * The usual ImageNet training pipeline: {@code RandomResizedCrop(size)}, {@code RandomHorizontalFlip(0.5)},
     * {@code Normalize(imagenet)}, float32 CHW.
     */
    public static TransformPipeline imagenetTrain(int size) {
        return of(List.of(
                Transform.randomResizedCrop(size),
                Transform.randomHorizontalFlip(0.5),
                Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD)));
    }

    /** The usual ImageNet evaluation pipeline: {@code Resize(resize)}, {@code CenterCrop(crop)}, {@code Normalize(imagenet)}. */
    public static TransformPipeline imagenetEval(int resize, int crop) {
        return of(List.of(
                Transform.resize(resize),
                Transform.centerCrop(crop),
                Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD)));
    }

    /**
     * Parses a list written the torchvision way, for command lines, for example
     * {@code "RandomResizedCrop(224, scale=(0.08, 1.0)), RandomHorizontalFlip(0.5), Normalize(imagenet)"}.
     * See {@link TransformParser} for the accepted forms.
     */
    public static TransformPipeline parse(String spec, OutputFormat format) {
        return of(TransformParser.parse(spec), format);
    }

    public List<Transform> steps() {
        return steps;
    }

    public OutputFormat format() {
        return format;
    }

    /** Output height in pixels. */
    public int height() {
        return height;
    }

    /** Output width in pixels. */
    public int width() {
        return width;
    }

    /** The tensor spec of one output sample. */
    public TensorSpec spec(String name) {
        return format.spec(name, height, width);
    }

    /**
     * The 256-entry-per-channel table from an 8-bit value to the stored float: {@code v / 255}, then
     * Normalize if present. Computed in float32 in the same order as torchvision, so values match it.
     */
    float[] floatTable() {
        float[] table = new float[3 * 256];
        for (int c = 0; c < 3; c++) {
            for (int v = 0; v < 256; v++) {
                float x = v / 255f;
                table[c * 256 + v] = normalize == null
                        ? x
                        : (x - normalize.mean()[c]) / normalize.std()[c];
            }
        }
        return table;
    }

    /**
     * Where each output pixel of an image of {@code width} x {@code height} comes from, drawing random
     * parameters from {@code random} in step order.
     */
    public SampleGeometry plan(int width, int height, SplittableRandom random) {
        AxisPlan x = new AxisPlan(width);
        AxisPlan y = new AxisPlan(height);
        boolean flip = false;
        for (Transform t : steps) {
            switch (t) {
                case Transform.RandomResizedCrop r -> {
                    int[] box = RandomResizedCropParams.sample(x.size, y.size, r, random);
                    y.crop(box[0], box[2], false);
                    x.crop(box[1], box[3], flip);
                    y.resize(r.height());
                    x.resize(r.width());
                }
                case Transform.Resize r -> {
                    if (r.keepsAspect()) {
                        int[] hw = shorterSideTo(/* width= */ x.size, /* height= */ y.size, r.height());
                        y.resize(hw[0]);
                        x.resize(hw[1]);
                    } else {
                        y.resize(r.height());
                        x.resize(r.width());
                    }
                }
                case Transform.CenterCrop c -> {
                    y.crop(centerCropOffset(y.size, c.height()), c.height(), false);
                    x.crop(centerCropOffset(x.size, c.width()), c.width(), flip);
                }
                case Transform.RandomHorizontalFlip f -> {
                    // torchvision draws torch.rand(1) < p on every call, so one draw per sample here too.
                    if (random.nextDouble() < f.p()) {
                        flip = !flip;
                    }
                }
                case Transform.Normalize n -> {}
            }
        }
        return new SampleGeometry(x.done(), y.done(), flip);
    }

    /** torchvision's {@code _compute_resized_output_size} for an int size: returns {height, width}. */
    static int[] shorterSideTo(int width, int height, int size) {
        if (width <= height) {
            return new int[] {(int) ((double) size * height / width), size};
        }
        return new int[] {size, (int) ((double) size * width / height)};
    }

    /** torchvision's {@code center_crop} offset, including its zero padding when the crop is larger. */
    static int centerCropOffset(int size, int crop) {
        if (crop > size) {
            return -((crop - size) / 2);
        }
        return (int) Math.rint((size - crop) / 2.0);
    }

    @Override
    public String toString() {
        return steps.stream().map(Transform::toString).collect(Collectors.joining(", ", "[", "]")) + " -> "
                + spec("image").describe().substring("image:".length());
    }

    /** One axis while the steps are applied: current size and the map from current to source coordinates. */
    private static final class AxisPlan {
        int size;
        double offset;
        double scale = 1;
        final double contentLo;
        final double contentHi;
        double clampLo;
        double clampHi;

        AxisPlan(int size) {
            this.size = size;
            this.contentHi = size;
            this.contentLo = 0;
            this.clampLo = 0;
            this.clampHi = size;
        }

        /** Keeps {@code [from, from + length)} of the current image (of the mirrored image if {@code mirrored}). */
        void crop(int from, int length, boolean mirrored) {
            int start = mirrored ? size - from - length : from;
            offset += scale * start;
            size = length;
        }

        void resize(int length) {
            // The resize sees only what the earlier crops kept, so its filter taps stop at that window.
            clampLo = Math.max(contentLo, offset);
            clampHi = Math.min(contentHi, offset + scale * size);
            scale = scale * size / length;
            size = length;
        }

        SampleGeometry.Axis done() {
            return new SampleGeometry.Axis(size, offset, scale, contentLo, contentHi, clampLo, clampHi);
        }
    }

    /** Holds the parameter list so the step order above reads like torchvision's. */
    private static final class RandomResizedCropParams {
        /** torchvision's {@code RandomResizedCrop.get_params}: returns {top, left, height, width}. */
        static int[] sample(int width, int height, Transform.RandomResizedCrop r, SplittableRandom random) {
            double area = (double) height * width;
            double logRatioMin = Math.log(r.ratioMin());
            double logRatioMax = Math.log(r.ratioMax());
            for (int attempt = 0; attempt < 10; attempt++) {
                double targetArea = area * uniform(random, r.scaleMin(), r.scaleMax());
                double aspect = Math.exp(uniform(random, logRatioMin, logRatioMax));
                int w = (int) Math.rint(Math.sqrt(targetArea * aspect));
                int h = (int) Math.rint(Math.sqrt(targetArea / aspect));
                if (0 < w && w <= width && 0 < h && h <= height) {
                    int top = random.nextInt(height - h + 1);
                    int left = random.nextInt(width - w + 1);
                    return new int[] {top, left, h, w};
                }
            }
            // Fallback: the largest centred crop whose aspect ratio is within range.
            double inRatio = (double) width / height;
            int w;
            int h;
            if (inRatio < r.ratioMin()) {
                w = width;
                h = (int) Math.rint(w / r.ratioMin());
            } else if (inRatio > r.ratioMax()) {
                h = height;
                w = (int) Math.rint(h * r.ratioMax());
            } else {
                w = width;
                h = height;
            }
            return new int[] {(height - h) / 2, (width - w) / 2, h, w};
        }

        private static double uniform(SplittableRandom random, double lo, double hi) {
            return lo == hi ? lo : random.nextDouble(lo, hi);
        }
    }
}
