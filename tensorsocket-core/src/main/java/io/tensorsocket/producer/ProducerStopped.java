package io.tensorsocket.producer;

/** Thrown inside the producer thread, and to whoever waits on the producer, when the producer is being closed. */
public sealed class ProducerStopped extends RuntimeException permits ProducerIdleEnd {
    ProducerStopped(String message) {
        super(message, null, false, false);
    }
}
