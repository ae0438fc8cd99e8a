package io.tensorsocket.pipeline;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads image files for one worker thread: the file's bytes go into reusable native memory, JPEG
 * (recognised by its magic bytes, not its name) to the chosen JPEG decoder and anything else to ImageIO.
 */
public final class ImageFileReader implements AutoCloseable {
    private static final long MAX_FILE_BYTES = 1L << 30;

    private final ImageDecoder jpegDecoder;
    private final ImageDecoder.Worker jpeg;
    private ImageDecoder.Worker other;
    private final NativeBuffer file = new NativeBuffer();
    private final RgbImage image = new RgbImage();

    /** A reader that decodes JPEG files with {@code jpegDecoder}. */
    public ImageFileReader(ImageDecoder jpegDecoder) {
        this.jpegDecoder = jpegDecoder;
        this.jpeg = jpegDecoder.newWorker();
    }

    /**
     * Decodes {@code path}. The returned image is this reader's buffer, valid until the next call.
     *
     * @throws IOException if the file cannot be read or decoded
     */
    public RgbImage read(Path path) throws IOException {
        MemorySegment bytes = load(path);
        if (isJpeg(bytes)) {
            jpeg.decode(bytes, image);
        } else {
            otherDecoder().decode(bytes, image);
        }
        return image;
    }

    private MemorySegment load(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size > MAX_FILE_BYTES) {
                throw new IOException(
                        "file is " + size + " bytes; images over 1 GiB are not supported, remove it from the folder");
            }
            MemorySegment buf = file.ensure(Math.max(size, 1)).asSlice(0, size);
            ByteBuffer bb = buf.asByteBuffer();
            while (bb.hasRemaining() && ch.read(bb) >= 0) {
                // read until full or end of file
            }
            return buf.asSlice(0, bb.position());
        }
    }

    private static boolean isJpeg(MemorySegment b) {
        return b.byteSize() >= 3
                && b.get(ValueLayout.JAVA_BYTE, 0) == (byte) 0xFF
                && b.get(ValueLayout.JAVA_BYTE, 1) == (byte) 0xD8
                && b.get(ValueLayout.JAVA_BYTE, 2) == (byte) 0xFF;
    }

    private ImageDecoder.Worker otherDecoder() {
        if (other == null) {
            other = jpegDecoder instanceof ImageIoDecoder ? jpeg : ImageIoDecoder.INSTANCE.newWorker();
        }
        return other;
    }

    @Override
    public void close() {
        jpeg.close();
        if (other != null && other != jpeg) {
            other.close();
        }
        file.close();
        image.close();
    }
}
