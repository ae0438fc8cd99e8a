package io.tensorsocket;

/** The producer died, was closed, or its connection broke while a consumer was attached. */
public final class ProducerGoneException extends TensorSocketException {
    public ProducerGoneException(String message) {
        super(message);
    }

    public ProducerGoneException(String message, Throwable cause) {
        super(message, cause);
    }
}
