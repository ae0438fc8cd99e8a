package io.tensorsocket;

/**
 * This consumer is a rank of a data-parallel job that cannot go on: another of its ranks died or was evicted, or
 * not all of its ranks joined the producer in time. The message names the rank. Restart the job's ranks together.
 */
public final class JobFailedException extends TensorSocketException {
    public JobFailedException(String message) {
        super(message);
    }
}
