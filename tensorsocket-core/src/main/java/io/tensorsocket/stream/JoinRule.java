package io.tensorsocket.stream;

import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;

/**
 * Where a consumer that joins now starts.
 *
 * <ol>
 *   <li>Before the first batch of an epoch is published: at that epoch's start, with nothing retained.</li>
 *   <li>If the current epoch's first batch is still inside the rubber band (the {@code R} most recently
 *       published batches): at that epoch's start, handed every batch of the epoch published so far.</li>
 *   <li>Otherwise, for a consumer that asked for {@link StartPolicy#NEXT_EPOCH_START}: at the next epoch's
 *       start, with nothing retained; it is sent nothing before that epoch's first batch
 *       ({@link StartPoint#sends}).</li>
 *   <li>Otherwise: mid-epoch, at the next batch to be published; its epoch ends one epoch of samples later,
 *       mid-way through the producer's next epoch. That start is {@link StartMode#EXACT} where the producer
 *       chooses the sample order ({@link ChunkedShuffle} then keeps every such epoch one pass over the data set)
 *       and {@link StartMode#ROLLING} where the source fixes it.</li>
 * </ol>
 *
 * <p>The rule reads only a {@link ProducerStream}'s state, so a producer on any transport asks it the same
 * way; a new way to join is a new case here.
 */
public final class JoinRule {
    private final int rubberBand;
    private final StartMode midEpoch;

    /** The rule of a stream whose source fixes its order: mid-epoch joiners roll. */
    public JoinRule(int rubberBand) {
        this(rubberBand, StartMode.ROLLING);
    }

    /**
     * The rule of a stream whose consumers joining mid-epoch start {@code midEpoch}: {@link StartMode#EXACT} where
     * the producer chooses the order, {@link StartMode#ROLLING} where the source does.
     */
    public JoinRule(int rubberBand, StartMode midEpoch) {
        if (rubberBand < 0) {
            throw new IllegalArgumentException("the rubber band holds 0 or more batches, not " + rubberBand);
        }
        if (midEpoch == StartMode.EPOCH_START) {
            throw new IllegalArgumentException("a mid-epoch start is rolling or exact, not " + midEpoch);
        }
        this.rubberBand = rubberBand;
        this.midEpoch = midEpoch;
    }

    /** How a consumer that joins mid-epoch starts: {@link StartMode#EXACT} or {@link StartMode#ROLLING}. */
    public StartMode midEpoch() {
        return midEpoch;
    }

    public int rubberBand() {
        return rubberBand;
    }

    /** Where a consumer that joins at once ({@link StartPolicy#JOIN_NOW}) starts. */
    public StartPoint decide(ProducerStream stream) {
        return decide(stream, StartPolicy.JOIN_NOW);
    }

    /** Where a consumer with start policy {@code policy} joining the stream in its current state starts. */
    public StartPoint decide(ProducerStream stream, StartPolicy policy) {
        if (stream.nextSample() == 0) {
            return StartPoint.of(StartMode.EPOCH_START, stream.nextEpoch(), 0);
        }
        long first = stream.epochStartSeq();
        if (first >= 0 && inWindow(first, stream.publishedSeq())) {
            return new StartPoint(StartMode.EPOCH_START, stream.nextEpoch(), 0, first, stream.publishedSeq());
        }
        if (policy == StartPolicy.NEXT_EPOCH_START) {
            return StartPoint.of(StartMode.EPOCH_START, stream.nextEpoch() + 1, 0);
        }
        return StartPoint.of(midEpoch, stream.nextEpoch(), stream.nextSample());
    }

    /** Whether batch {@code seq} is among the rubber band's batches when {@code publishedSeq} is the newest. */
    public boolean inWindow(long seq, long publishedSeq) {
        return seq <= publishedSeq && seq > publishedSeq - rubberBand;
    }
}
