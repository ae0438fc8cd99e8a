package io.tensorsocket.pipeline;

import java.lang.foreign.MemorySegment;

/**
 * A decoded image: interleaved 8-bit RGB, row-major, {@code width * 3} bytes per row, in native memory
 * that one worker thread reuses for every image it decodes.
 */
public final class RgbImage implements AutoCloseable {
    /** Refuse images whose RGB buffer would exceed this many bytes (a corrupt header, most likely). */
    static final long MAX_BYTES = 1L << 31;

    private final NativeBuffer buffer = new NativeBuffer();
    private int width;
    private int height;
    private MemorySegment pixels = MemorySegment.NULL;

    /**
     * Makes room for a {@code width} x {@code height} image and returns its pixel memory, to be filled
     * by a decoder.
     *
     * @throws IllegalArgumentException for empty or absurdly large images
     */
    public MemorySegment reset(int width, int height) {
        long bytes = (long) width * height * 3;
        if (width < 1 || height < 1 || bytes > MAX_BYTES) {
            throw new IllegalArgumentException("image of " + width + "x" + height
                    + " pixels is empty or larger than 2 GiB as RGB; check that the file is not corrupt");
        }
        this.width = width;
        this.height = height;
        this.pixels = buffer.ensure(bytes).asSlice(0, bytes);
        return pixels;
    }

    /**
     * A view of {@code pixels} as a {@code width} x {@code height} image, {@code height} rows of {@code width * 3}
     * bytes (a {@link DecodedCache}'s kept image): for reading; it owns nothing, and {@link #reset} must not be called.
     */
    static RgbImage view(int width, int height, MemorySegment pixels) {
        RgbImage v = new RgbImage();
        v.width = width;
        v.height = height;
        v.pixels = pixels;
        return v;
    }

    public int width() {
        return width;
    }

    public int height() {
        return height;
    }

    /** The pixels of the last decoded image: {@code height} rows of {@code width * 3} bytes. */
    public MemorySegment pixels() {
        return pixels;
    }

    @Override
    public void close() {
        buffer.close();
        pixels = MemorySegment.NULL;
    }
}
