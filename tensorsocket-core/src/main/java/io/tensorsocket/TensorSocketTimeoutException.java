package io.tensorsocket;

/** A bounded wait ran out: the message says what was awaited and which option sets the bound. */
public final class TensorSocketTimeoutException extends TensorSocketException {
    public TensorSocketTimeoutException(String message) {
        super(message);
    }

    public TensorSocketTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
