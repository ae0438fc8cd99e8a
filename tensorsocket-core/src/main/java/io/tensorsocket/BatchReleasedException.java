package io.tensorsocket;

/**
 * Thrown when a tensor of a batch is read after the batch was closed or the consumer moved on to the
 * next batch. The memory behind a released batch may already hold another batch, so reading it is
 * refused rather than answered with recycled bytes. Copy what you need to keep before releasing.
 */
public final class BatchReleasedException extends IllegalStateException {
    public BatchReleasedException(String message) {
        super(message);
    }
}
