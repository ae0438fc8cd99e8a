package io.tensorsocket;

/** A control message was malformed, of an unknown type, or of another protocol version. */
public final class ProtocolException extends TensorSocketException {
    public ProtocolException(String message) {
        super(message);
    }

    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
