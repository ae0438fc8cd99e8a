package io.tensorsocket;

/** The peer speaks another version of the control protocol: both sides must run the same TensorSocket release. */
public final class ProtocolVersionException extends TensorSocketException {
    public ProtocolVersionException(String message) {
        super(message);
    }
}
