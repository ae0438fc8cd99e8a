package io.tensorsocket.pipeline;

import io.tensorsocket.DType;
import io.tensorsocket.TensorSpec;
import java.util.Locale;

/** How a transformed image is stored in its batch tensor. */
public enum OutputFormat {
    /** float32 {@code [3, H, W]}, values {@code v / 255} or normalized: what a PyTorch model takes. */
    FLOAT32_CHW,
    /** uint8 {@code [H, W, 3]}: four times smaller; the consumer converts and normalizes. */
    UINT8_HWC;

    /** The tensor spec of one sample of {@code height} x {@code width} pixels. */
    public TensorSpec spec(String name, int height, int width) {
        return this == FLOAT32_CHW
                ? TensorSpec.of(name, DType.FLOAT32, 3, height, width)
                : TensorSpec.of(name, DType.UINT8, height, width, 3);
    }

    /**
     * Parses {@code float32}/{@code chw}/{@code float32_chw} or {@code uint8}/{@code hwc}/{@code uint8_hwc}.
     *
     * @throws IllegalArgumentException naming the accepted spellings
     */
    public static OutputFormat parse(String s) {
        return switch (s.trim().toLowerCase(Locale.ROOT).replace('-', '_')) {
            case "float32", "float", "chw", "float32_chw" -> FLOAT32_CHW;
            case "uint8", "byte", "hwc", "uint8_hwc" -> UINT8_HWC;
            default ->
                throw new IllegalArgumentException(
                        "unknown output format '" + s + "': use float32 (CHW) or uint8 (HWC)");
        };
    }
}
