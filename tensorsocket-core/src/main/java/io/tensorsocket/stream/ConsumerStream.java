package io.tensorsocket.stream;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * One consumer's view of the stream: the producer batches it was handed and still holds, the position of
 * the next sample it hands out, and its epochs. It regroups producer batches into batches of this
 * consumer's size, says which slots each spans, and which producer batches may be released.
 *
 * <pre>
 *  producer batches (B = 4)   |s0 . . .|s1 . . .|s2 . . .|s3 .|        (samplesPerEpoch = 14)
 *  consumer batches (b = 6)   |c0 . . . . .|c1 . . . . .|c2 .|         (c2 dropped with drop-last)
 *  c0 spans s0,s1 (gathered); c1 spans s1,s2,s3; s0 is releasable once c0 is taken,
 *  a batch inside one slot is a view and keeps that slot until it is closed (pinned).
 * </pre>
 *
 * <p>An epoch of this consumer is {@code samplesPerEpoch} consecutive stream positions from where it
 * started: producer epochs for a consumer that started at an epoch start, straddling two producer epochs
 * for a rolling one. Of each epoch it takes its {@link RankShare}: every sample, or a rank's share of them. Every
 * sample of its share is handed out exactly once, in order; every producer batch handed to the consumer becomes
 * releasable exactly once, in order. A rank's batch gathers one-sample pieces (its samples are {@code worldSize}
 * positions apart), so only a plain consumer's batches are ever views.
 */
public final class ConsumerStream {

    /** A producer batch this consumer holds. */
    private static final class Held {
        final long seq;
        final int slot;
        final long start;
        final long end;
        long consumed;
        boolean pinned;

        Held(long seq, int slot, long start, int samples) {
            this.seq = seq;
            this.slot = slot;
            this.start = start;
            this.end = start + samples;
            this.consumed = start;
        }
    }

    /** Part of a consumer batch: {@code samples} samples from {@code offset} in slot {@code slot}, placed at {@code destOffset}. */
    public record Piece(long seq, int slot, long offset, int samples, long destOffset) {}

    /**
     * A consumer batch to hand out: its epoch, index and first sample in this consumer's epoch, and the
     * pieces it is made of, in order. A batch of one piece is a view of that slot and pins it until
     * {@link ConsumerStream#unpin(long)}.
     */
    public record BatchPlan(long epoch, long index, long sampleStart, int samples, List<Piece> pieces) {
        /** Whether the batch lies inside one slot (a zero-copy view). */
        public boolean single() {
            return pieces.size() == 1;
        }
    }

    /** {@link #nextBatch()}: more descriptors must arrive before the next batch can be decided. */
    public static final int NEED_MORE = -1;

    private final StreamGeometry geometry;
    private final int batchSize;
    private final boolean dropLast;
    private final RankShare share;
    /** Samples of each epoch this consumer takes ({@link RankShare#count}). */
    private final long shareCount;
    /** Index in the current epoch's share of the next sample to hand out. */
    private long shareIndex;

    private final long startEpoch;
    private final long startPosition;
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    private long expectedSeq = -1;
    /**
     * Batch {@code seq} lies in slot {@code (seq - seqBase) % ringSlots} of the ring it comes from (the arena's, or a
     * lane's), which is slot {@code slotBase} on of those the consumer reads.
     */
    private long seqBase;

    private int slotBase;
    private int ringSlots;
    private long receivedUpTo;
    private boolean streamEnded;
    private long position;
    private long epochBase;
    private long epochNumber;
    private boolean epochStarted;
    private long batchIndex;
    /** Samples of its first epoch's share read before a checkpoint it resumes from ({@link #resumeAt}), 0 else. */
    private long resumed;

    /**
     * A consumer of {@code batchSize}-sample batches over an arena of {@code slots} slots, starting at
     * {@code startSample} of producer epoch {@code startEpoch} (see {@link JoinRule}).
     */
    public ConsumerStream(
            StreamGeometry geometry, int slots, int batchSize, boolean dropLast, long startEpoch, long startSample) {
        this(geometry, slots, batchSize, dropLast, startEpoch, startSample, RankShare.ALL);
    }

    /** As {@link #ConsumerStream(StreamGeometry, int, int, boolean, long, long)}, taking {@code share} of each epoch. */
    public ConsumerStream(
            StreamGeometry geometry,
            int slots,
            int batchSize,
            boolean dropLast,
            long startEpoch,
            long startSample,
            RankShare share) {
        if (batchSize < 1 || slots < 1) {
            throw new IllegalArgumentException("batch size and slot count must be at least 1");
        }
        this.geometry = geometry;
        this.ringSlots = slots;
        this.batchSize = batchSize;
        this.dropLast = dropLast;
        this.share = share;
        this.shareCount = share.count(geometry.samplesPerEpoch(), dropLast);
        this.startEpoch = startEpoch;
        this.startPosition = geometry.position(startEpoch, startSample);
        this.epochBase = startPosition;
        this.position = startPosition;
        this.receivedUpTo = startPosition;
        this.epochNumber = startEpoch;
    }

    // ------------------------------------------------------------------------------------------------ arrivals

    /**
     * Takes the descriptor of the next producer batch handed to this consumer.
     *
     * @throws IllegalArgumentException if it does not continue the stream where the last one ended
     */
    public void accept(BatchPosition p, int slot) {
        long start = p.start(geometry);
        if ((expectedSeq >= 0 && p.seq() != expectedSeq)
                || p.seq() < seqBase
                || slot != (int) ((p.seq() - seqBase) % ringSlots)
                || p.samples() < 1
                || p.samples() > geometry.producerBatchSize()
                || p.sampleStart() < 0
                || p.sampleStart() + p.samples() > geometry.samplesPerEpoch()
                || start != receivedUpTo
                || streamEnded) {
            throw new IllegalArgumentException("an inconsistent batch descriptor " + p + " in slot " + slot
                    + " (expected seq " + expectedSeq + " at stream position " + receivedUpTo + ")");
        }
        expectedSeq = p.seq() + 1;
        held.addLast(new Held(p.seq(), slotBase + slot, start, p.samples()));
        receivedUpTo = start + p.samples();
    }

    /**
     * The producer moved this consumer to a lane: the batches it holds and has not begun (nothing of them handed out)
     * go back, and the next descriptors are the lane's, batch {@code firstSeq} first, each in the lane's slot
     * {@code (seq - seqBase) % slotCount}, which its pieces name as {@code slotBase} on.
     *
     * <pre>
     *  held   |s7 consumed|s8 begun . .|s9 . . .|s10 . . .|     position inside s8
     *  kept   |s7|s8|                                          s9, s10 go back; the lane starts at s8's end
     * </pre>
     *
     * A consumer that caught up with the main stream moves back to it keeping everything ({@code giveBack} false), its
     * seqs counted from 0 again ({@code seqBase} 0) and its next batch {@code firstSeq}.
     *
     * @return the stream position where the lane's batches start: the end of what it keeps
     */
    public long moveTo(long firstSeq, long seqBase, int slotBase, int slotCount, boolean giveBack) {
        if (slotCount < 1 || seqBase < 0 || streamEnded) {
            throw new IllegalArgumentException("a move to a ring of " + slotCount + " slots from batch " + seqBase
                    + (streamEnded ? " after the stream ended" : ""));
        }
        while (giveBack
                && !held.isEmpty()
                && held.peekLast().consumed == held.peekLast().start
                && held.peekLast().start >= position
                && !held.peekLast().pinned) {
            receivedUpTo = held.pollLast().start;
        }
        this.seqBase = seqBase;
        this.slotBase = slotBase;
        this.ringSlots = slotCount;
        this.expectedSeq = firstSeq;
        return receivedUpTo;
    }

    /** The producer ended the stream: no more descriptors come. */
    public void endOfStream() {
        streamEnded = true;
    }

    /**
     * This consumer resumes its first epoch from a checkpoint after {@code handed} samples of its share: its first
     * epoch goes on from there, the descriptors arriving from the first sample it did not read.
     */
    public void resumeAt(long handed) {
        resumed = handed;
        position = epochBase + offset(handed);
        receivedUpTo = position;
    }

    public boolean streamEnded() {
        return streamEnded;
    }

    /** Stream position up to which descriptors have arrived. */
    public long receivedUpTo() {
        return receivedUpTo;
    }

    // ------------------------------------------------------------------------------------------------ epochs

    /** Whether an epoch was begun (the previous one must then be finished or skipped before the next). */
    public boolean epochStarted() {
        return epochStarted;
    }

    /**
     * Begins the next epoch. If one was begun before, the caller first skips to its {@link #epochEnd()}
     * ({@link #skipArrived(long)} as descriptors arrive).
     */
    public void beginEpoch() {
        if (epochStarted) {
            epochBase += geometry.samplesPerEpoch();
            epochNumber++;
        }
        epochStarted = true;
        batchIndex = 0;
        shareIndex = 0;
        if (resumed > 0) {
            shareIndex = resumed;
            batchIndex = (resumed + batchSize - 1) / batchSize;
            resumed = 0;
        }
    }

    /** This consumer's epoch number: its start epoch plus one per epoch begun after the first. */
    public long epoch() {
        return epochNumber;
    }

    /** Stream position where the current epoch begins. */
    public long epochBase() {
        return epochBase;
    }

    /** Stream position just past the current epoch. */
    public long epochEnd() {
        return epochBase + geometry.samplesPerEpoch();
    }

    /** Stream position of the next sample to hand out. */
    public long position() {
        return position;
    }

    /**
     * Stream position of sample {@code sample} of this consumer's epoch {@code epoch} (its index in the epoch's share:
     * the {@code sampleStart} of a batch, plus the index of a sample in it).
     */
    public long streamPosition(long epoch, long sample) {
        return startPosition + (epoch - startEpoch) * geometry.samplesPerEpoch() + offset(sample);
    }

    /** Samples of the current epoch's share handed out so far. */
    public long handed() {
        return shareIndex;
    }

    /** Stream position where this consumer's first epoch begins. */
    public long startPosition() {
        return startPosition;
    }

    /** Samples of each epoch this consumer takes: the whole epoch, or its rank's share. */
    public long samplesPerEpoch() {
        return shareCount;
    }

    /** Batches in one epoch at this consumer's batch size. */
    public long batchesPerEpoch() {
        long s = shareCount;
        return dropLast ? s / batchSize : (s + batchSize - 1) / batchSize;
    }

    /**
     * Whether every batch this consumer will ever get was handed out: its last epoch ({@link #lastEpochEnd}) passed, or
     * the stream ended and what arrived is used up.
     */
    public boolean isEndOfStream(long producerEpochs) {
        long last = lastEpochEnd(producerEpochs);
        boolean pastLastEpoch = producerEpochs > 0
                && (position >= last || (epochStarted && shareIndex >= shareCount && epochEnd() >= last));
        return pastLastEpoch || (streamEnded && position >= receivedUpTo);
    }

    /** Stream position just past the last epoch this consumer is owed ({@link StreamGeometry#lastEpochEnd}). */
    public long lastEpochEnd(long producerEpochs) {
        return geometry.lastEpochEnd(startPosition, producerEpochs);
    }

    /** Epochs of its own this consumer gets from a stream of {@code producerEpochs} epochs (0: endless). */
    public long epochsOwed(long producerEpochs) {
        return geometry.epochsOwed(startPosition, producerEpochs);
    }

    /**
     * Samples of the current epoch's share that will never arrive: the stream ended before them (its source could not
     * complete this consumer's last epoch). 0 while the stream runs, and for an epoch whose samples all arrived.
     */
    public long missing() {
        if (!streamEnded || !epochStarted) {
            return 0;
        }
        long arrived;
        if (!share.partial()) {
            arrived = Math.clamp(receivedUpTo - epochBase, 0, shareCount);
        } else {
            arrived = shareIndex;
            while (arrived < shareCount && epochBase + offset(arrived) < receivedUpTo) {
                arrived++;
            }
        }
        return shareCount - arrived;
    }

    /** Offset in its epoch of this consumer's sample {@code k}. */
    private long offset(long k) {
        return share.partial() ? share.offset(k, geometry.samplesPerEpoch(), dropLast) : k;
    }

    // ------------------------------------------------------------------------------------------------ batches

    /**
     * Samples in the next batch of the current epoch: a positive size when it has arrived, 0 at the end of
     * the epoch (or of the stream), or {@link #NEED_MORE}. Returning 0 early (a tail dropped with drop-last,
     * or the stream ended) consumes the samples that will not be handed out, so they become releasable.
     */
    public int nextBatch() {
        long end = epochEnd();
        if (share.partial() && shareIndex < shareCount) {
            skipArrived(epochBase + offset(shareIndex)); // the other ranks' samples before this one's next
        }
        long remaining = Math.min(end - position, shareCount - shareIndex);
        if (remaining <= 0) {
            skipArrived(end); // a share's last sample may lie before the epoch's end
            return 0;
        }
        int want = (int) Math.min(batchSize, remaining);
        long available = 0;
        if (!share.partial()) {
            available = Math.max(0, Math.min(want, receivedUpTo - position));
        } else {
            while (available < want && epochBase + offset(shareIndex + available) < receivedUpTo) {
                available++;
            }
        }
        if (available < want && !streamEnded) {
            return NEED_MORE;
        }
        if (available <= 0 || (dropLast && available < batchSize)) {
            skipArrived(end);
            return 0;
        }
        return (int) available;
    }

    /** Hands out the next {@code n} samples (as said by {@link #nextBatch()}): the slots they lie in. */
    public BatchPlan take(int n) {
        long first = epochBase + offset(shareIndex);
        long to = epochBase + offset(shareIndex + n - 1) + 1;
        if (n < 1 || shareIndex + n > shareCount || to > receivedUpTo || to > epochEnd()) {
            throw new IllegalArgumentException(n + " samples at stream position " + first + " have not all arrived");
        }
        List<Piece> pieces = new ArrayList<>(2);
        if (share.partial()) {
            for (int i = 0; i < n; i++) {
                long at = epochBase + offset(shareIndex + i);
                Held h = holding(at);
                pieces.add(new Piece(h.seq, h.slot, at - h.start, 1, i));
            }
        } else {
            for (Held h : held) {
                long a = Math.max(first, h.start);
                long b = Math.min(to, h.end);
                if (a < b) {
                    pieces.add(new Piece(h.seq, h.slot, a - h.start, (int) (b - a), a - first));
                }
            }
        }
        skipArrived(to); // everything up to the last sample taken is consumed (the other ranks' samples too)
        if (pieces.size() == 1) {
            find(pieces.getFirst().seq()).pinned = true;
        }
        BatchPlan plan = new BatchPlan(epochNumber, batchIndex, shareIndex, n, List.copyOf(pieces));
        batchIndex++;
        shareIndex += n;
        return plan;
    }

    /** The held batch that holds stream position {@code at}. */
    private Held holding(long at) {
        for (Held h : held) {
            if (h.start <= at && at < h.end) {
                return h;
            }
        }
        throw new IllegalStateException("no held batch holds stream position " + at);
    }

    /** Consumes, without handing them out, the arrived samples up to {@code target}; returns whether it got there. */
    public boolean skipArrived(long target) {
        long covered = Math.min(target, receivedUpTo);
        if (covered > position) {
            for (Held h : held) {
                if (h.start < covered) {
                    h.consumed = Math.max(h.consumed, Math.min(h.end, covered));
                }
            }
            position = covered;
        }
        return position >= target;
    }

    /** The view of batch {@code seq} was closed: its slot may be released once consumed. */
    public void unpin(long seq) {
        Held h = find(seq);
        if (h != null) {
            h.pinned = false;
        }
    }

    /** The oldest producer batch that may be released now (removed from those held), or -1 if none. */
    public long pollReleasable() {
        Held h = held.peekFirst();
        if (h == null || h.consumed < h.end || h.pinned) {
            return -1;
        }
        held.pollFirst();
        return h.seq;
    }

    private Held find(long seq) {
        for (Held h : held) {
            if (h.seq == seq) {
                return h;
            }
        }
        return null;
    }
}
