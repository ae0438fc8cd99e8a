package io.tensorsocket.flight;

/**
 * Turns on Arrow Flight's zero-copy write ({@code arrow.flight.enable_zero_copy_write}) unless the user
 * chose otherwise (that property or {@code ARROW_FLIGHT_ENABLE_ZERO_COPY_WRITE}). Flight reads the switch
 * once, when its message class loads, so every class of this module that may come first calls
 * {@link #enable()} before touching Flight. Safe here because a {@link StreamSession} keeps each batch's
 * arena slot until gRPC has released the memory it sends from (see {@code TensorColumns.Outbound#load}).
 */
final class ZeroCopyWrite {
    static final String PROPERTY = "arrow.flight.enable_zero_copy_write";

    private ZeroCopyWrite() {
    }

    static void enable() {
        if (System.getProperty(PROPERTY) == null && System.getenv("ARROW_FLIGHT_ENABLE_ZERO_COPY_WRITE") == null) {
            System.setProperty(PROPERTY, "true");
        }
    }
}
