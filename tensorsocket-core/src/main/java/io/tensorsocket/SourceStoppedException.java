package io.tensorsocket;

/**
 * Thrown by a {@link BatchSource} from {@link BatchSource#emitEpoch} to stop the stream on purpose, not as a
 * failure (an external feeder that finished, or was interrupted with Ctrl-C).
 *
 * <p>Thrown before the epoch published anything, the stream ends there: consumers finish what was served
 * and see the end of the stream, as after a last epoch. Thrown mid-epoch, the producer stops as when it is
 * closed: consumers get a {@link ProducerGoneException} carrying this message. Either way nothing is logged
 * as an error.
 */
public final class SourceStoppedException extends TensorSocketException {
    public SourceStoppedException(String message) {
        super(message);
    }
}
