package io.tensorsocket;

/**
 * Where a {@link BatchSource} puts an epoch's batches: the producer's arena. Both methods block while
 * every slot is still being read by some consumer (the group runs at its slowest consumer's pace).
 *
 * <p>Any thread may call these methods and {@link SlotWriter#publish(int)}; batches enter the stream in
 * the order their slots were claimed. If {@link BatchSource#emitEpoch} throws, the producer fails and
 * discards the claims that were never published: there is nothing to give back.
 */
public interface BatchSink {

    /**
     * Copies {@code batch} into the next free slot and publishes it to every consumer. The batch must fit
     * the source's {@link BatchLayout}; the caller may reuse its memory as soon as this returns.
     */
    void put(Batch batch);

    /**
     * Claims the next free slot for the source to fill in place. Claims are published in the order they
     * were made, whatever order {@link SlotWriter#publish(int)} is called in. A source may hold at most
     * the producer's {@code claimsAhead} unpublished claims at once.
     */
    SlotWriter claim();

    /** The most claims a source may hold unpublished at once (the producer's {@code claimsAhead}). */
    int claimsAhead();

    /**
     * Which of the producer's streams this sink fills: 0 its main stream, {@code k} its lane {@code k}, whose arena is
     * the file {@code lane-k} beside the producer's (see {@link IndexedSource#loadsConcurrently()}).
     */
    default int lane() {
        return 0;
    }
}
