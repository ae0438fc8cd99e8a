package io.tensorsocket;

/** Base of every error TensorSocket reports. Messages say what happened and what to do about it. */
public class TensorSocketException extends RuntimeException {
    public TensorSocketException(String message) {
        super(message);
    }

    public TensorSocketException(String message, Throwable cause) {
        super(message, cause);
    }
}
