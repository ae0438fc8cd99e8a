package io.tensorsocket.external;

import io.tensorsocket.TensorSocketException;

/** The external feeder of a producer broke its declaration, failed, went silent or disconnected. */
public final class FeederFailedException extends TensorSocketException {
    public FeederFailedException(String message) {
        super(message);
    }
}
