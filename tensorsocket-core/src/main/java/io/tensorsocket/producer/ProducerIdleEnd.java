package io.tensorsocket.producer;

/**
 * Thrown inside the producer thread when consumers came, read and left, and none came back within the idle timeout:
 * the normal end of a producer that serves until its consumers are done.
 */
public final class ProducerIdleEnd extends ProducerStopped {
    ProducerIdleEnd(String message) {
        super(message);
    }
}
