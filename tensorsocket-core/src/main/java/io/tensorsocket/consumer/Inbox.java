package io.tensorsocket.consumer;

import io.tensorsocket.protocol.Message;

/**
 * Where a consumer's stream events arrive, one per transport, chosen once when the consumer joins: its
 * socket ({@link SocketInbox}) or the descriptor ring the producer gave it ({@link RingInbox}). Used by
 * the iterating thread only, except {@link #abortWait()}.
 */
interface Inbox extends AutoCloseable {

    /**
     * The next message, waiting at most {@code timeoutNanos} (and no longer than the link's liveness allows).
     *
     * @throws io.tensorsocket.TensorSocketException the link's failure, or a timeout saying what was awaited
     * @throws IllegalStateException                 once the consumer is being closed
     */
    Message take(long timeoutNanos, String awaited);

    /** The next message if one arrived already, else null. */
    Message poll();

    /** Whether the latest {@link #take} found nothing and had to wait for the producer. */
    boolean waited();

    /** Whether messages not yet taken include the stream's END. */
    boolean endPending();

    /** Ends a wait in {@link #take} on another thread. */
    void abortWait();

    @Override
    void close();
}
