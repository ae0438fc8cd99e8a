package io.tensorsocket;

/** A producer directory or file belongs to another user or has permissions that would expose data. */
public final class PermissionDeniedException extends TensorSocketException {
    public PermissionDeniedException(String message) {
        super(message);
    }

    public PermissionDeniedException(String message, Throwable cause) {
        super(message, cause);
    }
}
