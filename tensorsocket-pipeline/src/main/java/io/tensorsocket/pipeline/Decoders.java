package io.tensorsocket.pipeline;

import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Chooses the JPEG decoder: TurboJPEG where the library loads, ImageIO otherwise. */
public final class Decoders {
    private static final Logger LOG = LoggerFactory.getLogger(Decoders.class);
    private static volatile boolean reported;

    private Decoders() {}

    /** TurboJPEG if {@code libturbojpeg.so.0} loads here, else ImageIO; logs the choice once per JVM. */
    public static ImageDecoder best() {
        ImageDecoder chosen;
        String why;
        try {
            chosen = TurboJpegDecoder.load();
            why = "libjpeg-turbo found";
        } catch (IllegalStateException e) {
            chosen = ImageIoDecoder.INSTANCE;
            why = e.getMessage();
        }
        if (!reported) {
            reported = true;
            if (chosen instanceof TurboJpegDecoder) {
                LOG.info("JPEG decoder: turbojpeg ({})", why);
            } else {
                LOG.warn("JPEG decoder: imageio, about 3x slower ({})", why);
            }
        }
        return chosen;
    }

    /**
     * The decoder called {@code name}: {@code auto} (see {@link #best()}), {@code turbojpeg} or
     * {@code imageio}.
     *
     * @throws IllegalArgumentException for another name
     * @throws IllegalStateException if {@code turbojpeg} is asked for and cannot be loaded
     */
    public static ImageDecoder named(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "auto", "best" -> best();
            case "turbojpeg", "turbo", "libjpeg-turbo" -> TurboJpegDecoder.load();
            case "imageio", "java" -> ImageIoDecoder.INSTANCE;
            default ->
                throw new IllegalArgumentException("unknown decoder '" + name + "': use auto, turbojpeg or imageio");
        };
    }
}
