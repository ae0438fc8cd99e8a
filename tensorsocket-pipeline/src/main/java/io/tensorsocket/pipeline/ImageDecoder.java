package io.tensorsocket.pipeline;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * Turns encoded image bytes into an {@link RgbImage}. The decoder itself is shared and thread-safe;
 * each worker thread opens its own {@link Worker}, which keeps native handles and scratch memory from
 * image to image.
 */
public interface ImageDecoder {

    /** Short name, as users choose it: {@code turbojpeg} or {@code imageio}. */
    String name();

    /** A decoder for one thread. */
    Worker newWorker();

    /** Decodes images for one thread at a time. */
    interface Worker extends AutoCloseable {

        /**
         * Decodes {@code encoded} (the whole file) into {@code into}, replacing what it held.
         *
         * @throws IOException if the bytes are not an image this decoder reads
         */
        void decode(MemorySegment encoded, RgbImage into) throws IOException;

        @Override
        void close();
    }
}
