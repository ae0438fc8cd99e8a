package io.tensorsocket.pipeline;

import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How a single-channel source turned pixel bytes into floats: {@code (v / 255 - mean) / std}, torchvision's
 * {@code ToTensor} then {@code Normalize(mean, std)}.
 *
 * <p>The producer announces it inside its source description as two words, {@code mean=<float> std=<float>}
 * (docs/PROTOCOL.md, "Source description"), so that a client can prepare its own data, a test set for
 * instance, exactly as the served batches were prepared. This class writes those words and reads them back;
 * the Python client's {@code tensorsocket_client.description} reads the same words.
 *
 * @param mean subtracted after scaling to [0, 1]
 * @param std  divided by afterwards; positive
 */
public record Normalization(float mean, float std) {
    /** No normalisation: values in [0, 1]. */
    public static final Normalization NONE = new Normalization(0f, 1f);

    private static final Pattern MEAN = Pattern.compile("(?:^|\\s)mean=([-+0-9.eE]+)(?=\\s|$)");
    private static final Pattern STD = Pattern.compile("(?:^|\\s)std=([-+0-9.eE]+)(?=\\s|$)");

    public Normalization {
        if (!Float.isFinite(mean)) {
            throw new IllegalArgumentException("the mean must be a finite number, got " + mean);
        }
        if (!(std > 0) || !Float.isFinite(std)) {
            throw new IllegalArgumentException("the standard deviation must be a positive number, got " + std);
        }
    }

    /** {@code v} (0..255) as the served float. */
    public float apply(int v) {
        return (v / 255f - mean) / std;
    }

    /** The words of the source description: {@code mean=<float> std=<float>}. */
    public String describe() {
        return String.format(Locale.ROOT, "mean=%s std=%s", Float.toString(mean), Float.toString(std));
    }

    /**
     * The normalisation a source description announces, or empty when it names none (a uint8 or synthetic
     * source, or a producer of another kind).
     *
     * @throws IllegalArgumentException when it names only one of mean and std, or a value that is not a number
     */
    public static Optional<Normalization> fromDescription(String description) {
        Matcher m = MEAN.matcher(description);
        Matcher s = STD.matcher(description);
        boolean hasMean = m.find();
        boolean hasStd = s.find();
        if (!hasMean && !hasStd) {
            return Optional.empty();
        }
        if (hasMean != hasStd) {
            throw new IllegalArgumentException("the source description names "
                    + (hasMean ? "a mean but no std" : "a std but no mean") + ": " + description);
        }
        try {
            return Optional.of(new Normalization(Float.parseFloat(m.group(1)), Float.parseFloat(s.group(1))));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "the source description's mean or std is not a number: " + description, e);
        }
    }
}
