package io.tensorsocket.spi;

/**
 * The producer upstream of a relay, asked on behalf of the relay's own consumers that join mid-epoch. A relay's
 * epochs are its upstream's, and only the upstream chooses their order; so a relay consumer that joins at offset
 * {@code o} of epoch {@code e} gets an exact epoch only if the upstream keeps {@code o} as a boundary of its next
 * epochs, as it does for its own consumers that join there ({@code io.tensorsocket.stream.ChunkedShuffle}). It can
 * while it has not drawn the order of epoch {@code e + 1}; after that the relay consumer starts at the next epoch
 * start instead, which the relay receives moments later (it trails its upstream by no more than its buffers).
 *
 * <p>Counted: {@link #keep} for {@code n} consumers and {@link #release} once for each as it leaves; the upstream
 * lets the boundary go with the last. The producer calls both under its lock: a keep waits a bounded time for the
 * upstream's answer, a release does not wait.
 */
public interface UpstreamBoundaries {

    /** What the upstream said to a {@link #keep}. */
    enum Answer {
        /** The boundary holds from the upstream's next epoch on: the joiner's epochs are exact. */
        KEPT,
        /** The upstream drew its next epoch's order already: the joiner starts at the next epoch start. */
        TOO_LATE,
        /** The upstream cannot keep boundaries (it fixes its order, or did not answer in time): the joiner rolls. */
        UNAVAILABLE
    }

    /** Asks that offset {@code offset} (in {@code (0, samplesPerEpoch)}) of epoch {@code epoch} be kept for {@code n} consumers. */
    Answer keep(long epoch, int offset, int n);

    /** One consumer that joined at {@code offset} after a {@link Answer#KEPT} left. */
    void release(int offset);
}
