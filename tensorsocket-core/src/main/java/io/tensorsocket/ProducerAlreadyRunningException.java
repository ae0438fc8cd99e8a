package io.tensorsocket;

/** A live producer already holds the requested name or directory. */
public final class ProducerAlreadyRunningException extends TensorSocketException {
    public ProducerAlreadyRunningException(String message) {
        super(message);
    }

    public ProducerAlreadyRunningException(String message, Throwable cause) {
        super(message, cause);
    }
}
