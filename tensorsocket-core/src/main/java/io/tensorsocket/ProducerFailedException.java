package io.tensorsocket;

/** The producer's loader threw: the message names the cause, which the producer logged in full. */
public final class ProducerFailedException extends TensorSocketException {
    public ProducerFailedException(String message) {
        super(message);
    }

    public ProducerFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
