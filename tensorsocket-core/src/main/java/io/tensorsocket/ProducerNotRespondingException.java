package io.tensorsocket;

/**
 * The producer's process still holds its connection open but has sent nothing, not even the heartbeat it
 * sends every second while it has nothing else to say, for longer than the consumer's liveness timeout
 * ({@link ConsumerOptions#liveness()}): it is stopped (SIGSTOP, a debugger) or deadlocked. A producer whose
 * loader is merely slow keeps sending heartbeats and never causes this.
 */
public final class ProducerNotRespondingException extends TensorSocketException {
    public ProducerNotRespondingException(String message) {
        super(message);
    }
}
