package io.tensorsocket;

/** The producer refused a consumer's request, such as a batch size it can never serve. */
public final class RequestRejectedException extends TensorSocketException {
    public RequestRejectedException(String message) {
        super(message);
    }

    public RequestRejectedException(String message, Throwable cause) {
        super(message, cause);
    }
}
