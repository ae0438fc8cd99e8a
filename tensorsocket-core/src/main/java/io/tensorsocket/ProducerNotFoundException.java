package io.tensorsocket;

/** No producer is running under the name or directory a consumer asked for. */
public final class ProducerNotFoundException extends TensorSocketException {
    public ProducerNotFoundException(String message) {
        super(message);
    }

    public ProducerNotFoundException(String message, Throwable cause) {
        super(message, cause);
    }
}
