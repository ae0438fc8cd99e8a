package io.tensorsocket;

/**
 * Thrown by a {@link BatchSource} from {@link BatchSource#emitEpoch} to stop the stream on purpose, not as a
 * failure (an external feeder that finished, or was interrupted with Ctrl-C).
 *
 * <p>Unless it stops {@link #now()}, thrown before the epoch published anything it ends the stream there:
 * consumers finish what was served and see the end of the stream, as after a last epoch. Thrown mid-epoch,
 * or to stop now (an interrupted feeder: the stream is not what was asked for), the producer stops as when
 * it is closed: consumers get a {@link ProducerGoneException} carrying this message. Either way nothing is
 * logged as an error.
 */
public final class SourceStoppedException extends TensorSocketException {
    private final boolean now;

    /** @param now stop at once, even at an epoch boundary, rather than end the stream there */
    public SourceStoppedException(String message, boolean now) {
        super(message);
        this.now = now;
    }

    /** Whether the producer stops at once, even at an epoch boundary. */
    public boolean now() {
        return now;
    }
}
