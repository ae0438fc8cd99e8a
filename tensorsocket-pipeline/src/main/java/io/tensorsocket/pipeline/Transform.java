package io.tensorsocket.pipeline;

import java.util.Arrays;
import java.util.Locale;

/**
 * One step of an image pipeline, named and parameterised as in torchvision.transforms. Steps are
 * combined with {@link TransformPipeline}, which fuses all geometric steps of a sample into one
 * resampling pass.
 */
public sealed interface Transform {

    /** ImageNet channel means, as torchvision examples use them. */
    @SuppressWarnings("MutablePublicArray") // public API since 0.1; Normalize copies it
    float[] IMAGENET_MEAN = {0.485f, 0.456f, 0.406f};
    /** ImageNet channel standard deviations. */
    @SuppressWarnings("MutablePublicArray") // public API since 0.1; Normalize copies it
    float[] IMAGENET_STD = {0.229f, 0.224f, 0.225f};

    /** torchvision's {@code RandomResizedCrop(size)}: scale (0.08, 1.0), ratio (3/4, 4/3). */
    static RandomResizedCrop randomResizedCrop(int size) {
        return new RandomResizedCrop(size, size, 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0);
    }

    /** {@code Resize(size)}: the shorter side becomes {@code size}, keeping the aspect ratio. */
    static Resize resize(int size) {
        return new Resize(size, -1);
    }

    /** {@code Resize((height, width))}: exactly this size. */
    static Resize resize(int height, int width) {
        return new Resize(height, width);
    }

    /** {@code CenterCrop(size)}: a square crop from the centre, zero-padded where the image is smaller. */
    static CenterCrop centerCrop(int size) {
        return new CenterCrop(size, size);
    }

    /** {@code CenterCrop((height, width))}. */
    static CenterCrop centerCrop(int height, int width) {
        return new CenterCrop(height, width);
    }

    /** {@code RandomHorizontalFlip(p)}. */
    static RandomHorizontalFlip randomHorizontalFlip(double p) {
        return new RandomHorizontalFlip(p);
    }

    /** {@code Normalize(mean, std)} on values in [0, 1], per RGB channel. */
    static Normalize normalize(float[] mean, float[] std) {
        return new Normalize(mean, std);
    }

    /** torchvision's {@code transforms.RandomResizedCrop}: a random area and aspect ratio, resized to (height, width). */
    record RandomResizedCrop(int height, int width, double scaleMin, double scaleMax, double ratioMin, double ratioMax)
            implements Transform {
        public RandomResizedCrop {
            requirePositive(height, width, "RandomResizedCrop size");
            if (!(scaleMin > 0 && scaleMin <= scaleMax && scaleMax <= 1)) {
                throw new IllegalArgumentException("RandomResizedCrop scale must satisfy 0 < min <= max <= 1, got ("
                        + scaleMin + ", " + scaleMax + ")");
            }
            if (!(ratioMin > 0 && ratioMin <= ratioMax)) {
                throw new IllegalArgumentException("RandomResizedCrop ratio must satisfy 0 < min <= max, got ("
                        + ratioMin + ", " + ratioMax + ")");
            }
        }

        @Override
        public String toString() {
            return String.format(
                    Locale.ROOT,
                    "RandomResizedCrop(size=(%d, %d), scale=(%s, %s), ratio=(%.4f, %.4f))",
                    height,
                    width,
                    scaleMin,
                    scaleMax,
                    ratioMin,
                    ratioMax);
        }
    }

    /**
     * torchvision's {@code transforms.Resize}, bilinear with antialiasing: with {@code width < 0} the
     * shorter side becomes {@code height}, otherwise the image becomes exactly height x width.
     */
    record Resize(int height, int width) implements Transform {
        public Resize {
            if (height < 1 || width == 0 || width < -1) {
                throw new IllegalArgumentException("Resize size must be positive, got (" + height + ", " + width + ")");
            }
        }

        /** Whether the shorter side is resized and the aspect ratio kept. */
        public boolean keepsAspect() {
            return width < 0;
        }

        @Override
        public String toString() {
            return keepsAspect() ? "Resize(" + height + ")" : "Resize((" + height + ", " + width + "))";
        }
    }

    /** torchvision's {@code transforms.CenterCrop}. */
    record CenterCrop(int height, int width) implements Transform {
        public CenterCrop {
            requirePositive(height, width, "CenterCrop size");
        }

        @Override
        public String toString() {
            return "CenterCrop((" + height + ", " + width + "))";
        }
    }

    /** torchvision's {@code transforms.RandomHorizontalFlip}: mirrors with probability {@code p}. */
    record RandomHorizontalFlip(double p) implements Transform {
        public RandomHorizontalFlip {
            if (!(p >= 0 && p <= 1)) {
                throw new IllegalArgumentException("RandomHorizontalFlip probability must be in [0, 1], got " + p);
            }
        }

        @Override
        public String toString() {
            return "RandomHorizontalFlip(p=" + p + ")";
        }
    }

    /** torchvision's {@code transforms.Normalize} after {@code ToTensor}: {@code (v / 255 - mean) / std}. */
    record Normalize(float[] mean, float[] std) implements Transform {
        public Normalize {
            if (mean.length != 3 || std.length != 3) {
                throw new IllegalArgumentException(
                        "Normalize needs three means and three standard deviations (R, G, B), got " + mean.length
                                + " and " + std.length);
            }
            for (float s : std) {
                if (!(s > 0)) {
                    throw new IllegalArgumentException(
                            "Normalize standard deviations must be positive, got " + Arrays.toString(std));
                }
            }
            mean = mean.clone();
            std = std.clone();
        }

        @Override
        public float[] mean() {
            return mean.clone();
        }

        @Override
        public float[] std() {
            return std.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Normalize n && Arrays.equals(n.mean, mean) && Arrays.equals(n.std, std);
        }

        @Override
        public int hashCode() {
            return 31 * Arrays.hashCode(mean) + Arrays.hashCode(std);
        }

        @Override
        public String toString() {
            return "Normalize(mean=" + Arrays.toString(mean) + ", std=" + Arrays.toString(std) + ")";
        }
    }

    private static void requirePositive(int height, int width, String what) {
        if (height < 1 || width < 1) {
            throw new IllegalArgumentException(what + " must be positive, got (" + height + ", " + width + ")");
        }
    }
}
