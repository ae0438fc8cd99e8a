package io.tensorsocket.producer;

import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.JoinRule;
import java.util.Arrays;

/**
 * Which arena slot holds which batch and how many consumers still hold it. Slots are used as a ring:
 * batch {@code seq} goes to slot {@code seq % N}, and a slot may be claimed for a new batch only once no
 * consumer holds its old one. A slot is in use while it holds a batch that is unpublished, held, or inside
 * the rubber-band window. Pure bookkeeping, used under the producer's lock.
 *
 * <pre>
 *   seq:    ... 8   9   10  11 | 12  13      N = 4 slots, rubber band 2, published up to seq 11
 *   slot:       0   1   2   3  | 0   1       slot 0 may take seq 12 once seq 8's holders are 0
 *   window:             [10 11]              joiners at an epoch start within it are sent 10 and 11
 * </pre>
 */
final class SlotTable {
    private final long[] seq;
    private final BatchPosition[] batch;
    private final int[] holders;

    SlotTable(int slots) {
        this.seq = new long[slots];
        this.batch = new BatchPosition[slots];
        this.holders = new int[slots];
        Arrays.fill(seq, -1);
    }

    int count() {
        return seq.length;
    }

    int slotOf(long s) {
        return (int) (s % seq.length);
    }

    /** The BATCH_READY that announces the batch at {@code p}, in the slot it occupies. */
    Message.BatchReady ready(BatchPosition p) {
        return new Message.BatchReady(p.seq(), slotOf(p.seq()), p.epoch(), p.index(), p.sampleStart(), p.samples());
    }

    /** Whether no consumer holds the batch in {@code slot}, so it may be claimed. */
    boolean isFree(int slot) {
        return holders[slot] == 0;
    }

    /** Slot {@code slotOf(s)} is claimed for batch {@code s}; it holds nothing readable until {@link #published}. */
    void claim(long s) {
        int slot = slotOf(s);
        if (holders[slot] != 0) {
            throw new IllegalStateException(
                    "slot " + slot + " still has " + holders[slot] + " holders of batch " + seq[slot]);
        }
        seq[slot] = s;
        batch[slot] = null;
    }

    /** The batch at {@code p} was published in its slot. */
    void published(BatchPosition p) {
        int slot = slotOf(p.seq());
        if (seq[slot] != p.seq()) {
            throw new IllegalStateException(
                    "batch " + p.seq() + " was not claimed (slot " + slot + " has " + seq[slot] + ")");
        }
        batch[slot] = p;
    }

    /** Where published batch {@code s} lies in the stream. */
    BatchPosition batch(long s) {
        return batch[slotOf(s)];
    }

    /** The batch slot {@code slot} holds, or -1 before its first claim. */
    long seqIn(int slot) {
        return seq[slot];
    }

    /** One more consumer holds batch {@code s}. */
    void hold(long s) {
        holders[slotOf(s)]++;
    }

    /** One consumer fewer holds batch {@code s}; returns whether its slot is now free. */
    boolean release(long s) {
        int slot = slotOf(s);
        if (holders[slot] <= 0) {
            throw new IllegalStateException("batch " + s + " released with no holder");
        }
        return --holders[slot] == 0;
    }

    /** Slots in use, the stream being published up to {@code publishedSeq}. */
    int inUse(long publishedSeq, JoinRule window) {
        int n = 0;
        for (int slot = 0; slot < seq.length; slot++) {
            long s = seq[slot];
            if (s >= 0 && (holders[slot] > 0 || s > publishedSeq || window.inWindow(s, publishedSeq))) {
                n++;
            }
        }
        return n;
    }
}
