package io.tensorsocket;

/** The producer dropped this consumer because it held a batch longer than the producer's stall timeout. */
public final class ConsumerEvictedException extends TensorSocketException {
    public ConsumerEvictedException(String message) {
        super(message);
    }

    public ConsumerEvictedException(String message, Throwable cause) {
        super(message, cause);
    }
}
