package io.tensorsocket.pipeline;

/**
 * Where every output pixel of one sample comes from: the fused result of all geometric transforms
 * (crops, resizes, flips), applied by {@link Resampler} in a single pass.
 *
 * @param x     the horizontal axis
 * @param y     the vertical axis
 * @param flipX whether the output is mirrored left to right
 */
public record SampleGeometry(Axis x, Axis y, boolean flipX) {

    /**
     * One axis of the mapping. Output pixel {@code i} (of {@code size}) has its centre at source
     * coordinate {@code offset + (i + 0.5) * scale}, pixel edges at integers. Output pixels whose centre
     * falls outside {@code [contentLo, contentHi)} are padding (value 0); filter taps are kept inside
     * {@code [clampLo, clampHi)}, the region the last resize saw, as torchvision crops before it resizes.
     */
    public record Axis(
            int size,
            double offset,
            double scale,
            double contentLo,
            double contentHi,
            double clampLo,
            double clampHi) {}
}
