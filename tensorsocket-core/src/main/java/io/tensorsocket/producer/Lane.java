package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchSink;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.ProducerStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One consumer's stream after it fell behind: the source loads its batches again, by index, over the orders the main
 * stream drew, from the stream position where the consumer left the main stream, at the consumer's own pace. Its
 * batches go to an arena of its own ({@code lane-K} beside the producer's arena, shaped as it) and are numbered from
 * {@link #seqBase}, so that a consumer tells them, and the producer their releases, from the main stream's.
 *
 * <pre>
 *  main stream   …| e3: b0 b1 b2 b3 b4 b5 b6 b7 | e4: b0 b1 …      the fast consumers, at their speed
 *  lane 1                  | b2 b3 b4 b5 b6 b7 | e4: b0 …          the consumer that had begun e3's b1 and gave
 *                          ^ MOVED position                        back b2 and later; seqs from n·2^40
 * </pre>
 *
 * A lane serves the consumer it was started for (or all the ranks of a job, which move together) and any other that
 * falls behind while every lane runs and whose
 * place lies ahead of the lane's ({@link #members}): each takes the lane's batches from where it moved on, and the
 * lane reads at the pace of its slowest member, as the main stream does. A member that catches up with the main stream
 * (its next batch is the main stream's next) rejoins it there (MOVE to lane 0). A lane lives until its last member
 * rejoined or left, or its stream ends (the producer's last epoch, or where the main stream ended); it removes its
 * arena then (a consumer still reading a batch of it keeps the mapping). It runs on a thread of its own, with one claim
 * at a time; everything it shares with the producer is guarded by the producer's lock.
 */
final class Lane implements BatchSink, Runnable {
    /**
     * The {@code n}th lane a producer starts numbers its batches from {@code n × SEQ_SPAN} on; the main stream's stay
     * below the first. 2^40 batches a lane, 2^23 lanes a producer.
     */
    static final long SEQ_SPAN = 1L << 40;

    final int number;
    final long seqBase;
    /**
     * The consumers it serves, the one it was started for first; each takes its batches from its {@code laneFrom} on
     * (-1 while its MOVE waits: the lane publishes nothing meanwhile). Under the producer's lock.
     */
    final List<ConsumerSession> members = new ArrayList<>(2);

    final Path file;
    private final Lanes lanes;
    private final ArenaLayout layout;
    private final SlotTable slots;

    // guarded by the producer's lock
    private SharedArena arena;
    /** The stream position the consumer said its lane starts at (MOVED), or -1 before. */
    long movedAt = -1;

    boolean closed;
    private long nextSeq;
    /** Its batches' places in the stream, from where its consumer left the main stream ({@link #movedAt}) on. */
    final ProducerStream stream;

    long samplesLoaded;

    /** The rest of an epoch it loads for a consumer that resumed ({@link Lanes#resume}), or null for a laggard's lane. */
    ResumePlan plan;

    Lane(int number, long serial, List<ConsumerSession> founders, Lanes lanes, ArenaLayout layout, Path file) {
        this.number = number;
        this.seqBase = serial * SEQ_SPAN;
        this.members.addAll(founders);
        this.lanes = lanes;
        this.layout = layout;
        this.file = file;
        this.slots = new SlotTable(layout.slotCount());
        this.stream = new ProducerStream(lanes.geometry());
    }

    /** Whether batch {@code seq} is one of this lane's. */
    boolean owns(long seq) {
        return seq >= seqBase && seq < seqBase + SEQ_SPAN;
    }

    /** The consumer released lane batch {@code seq}; whether its slot came free. Under the producer's lock. */
    boolean release(long seq) {
        return slots.release(seq - seqBase);
    }

    /** Where lane batch {@code seq} lies in the stream. Under the producer's lock. */
    BatchPosition batch(long seq) {
        return slots.batch(seq - seqBase);
    }

    /** The MOVE that tells the consumer where its lane's batches are. */
    Message.Move move() {
        return new Message.Move(number, layout.slotCount(), seqBase);
    }

    /** The consumer it was started for (the first, for a job's ranks). Under the producer's lock. */
    ConsumerSession founder() {
        return members.getFirst();
    }

    /** A member whose MOVE still waits for its answer, or null. Under the producer's lock. */
    ConsumerSession joining() {
        for (ConsumerSession m : members) {
            if (m.laneFrom < 0) {
                return m;
            }
        }
        return null;
    }

    /** Whether a consumer whose batch spans {@code span} positions can read from it: it needs its slots and two more. */
    boolean fits(int span) {
        return LaneSizing.least(lanes.geometry(), span) <= layout.slotCount();
    }

    /** Member {@code m} holds lane batch {@code seq} (its slot is not reused until every holder released it). */
    void hold(long seq) {
        slots.hold(seq - seqBase);
    }

    @Override
    public void run() {
        try {
            SharedArena made = makeArena();
            long from = made == null ? -1 : lanes.steps().awaitMoved(this, made);
            if (from >= 0) {
                serve();
            }
        } catch (LaneClosed | ProducerStopped e) {
            // its consumer left, or the producer stopped: nothing to tell anyone
        } catch (Throwable t) {
            lanes.steps().failed(this, t);
        } finally {
            lanes.ended(this);
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // the producer's directory goes with it
            }
        }
    }

    /**
     * The lane's arena, or null where it could not be made: its founders, not yet moved, then keep the main stream
     * ({@link Lanes#notMade}).
     */
    private SharedArena makeArena() {
        SharedArena made = null;
        try {
            made = SharedArena.create(file, layout, lanes.sessionId(), lanes.pid());
            lanes.share(file);
            return made;
        } catch (IOException | RuntimeException e) {
            if (made != null) {
                made.close();
            }
            lanes.notMade(this, e);
            return null;
        }
    }

    /** Loads epoch after epoch from where the consumer moved (its {@link #stream} resumed there) to its stream's end. */
    private void serve() throws Exception {
        if (plan != null) {
            for (ResumePlan.Segment seg : plan.segments()) {
                lanes.source().emitEpoch(seg.epoch(), seg.ids(), this);
                if (seg.start() + seg.ids().length == lanes.geometry().samplesPerEpoch()) {
                    lanes.steps().endEpoch(this, seg.epoch());
                }
            }
            lanes.steps().endResumed(this);
            return;
        }
        while (true) {
            long e = stream.nextEpoch(); // this thread alone moves the stream on
            int s = (int) stream.nextSample();
            int[] order = lanes.steps().orderFor(this, e);
            if (order == null) {
                return;
            }
            lanes.source().emitEpoch(e, s == 0 ? order : Arrays.copyOfRange(order, s, order.length), this);
            if (!lanes.steps().endEpoch(this, e)) {
                return; // a finite stream's tail: its members' streams end there
            }
        }
    }

    /** Under the producer's lock: the epoch's end, as the main stream says it; throws if the source broke its shape. */
    Message.EpochEnd end(long e) {
        Message.EpochEnd end = new Message.EpochEnd(e, stream.nextIndex(), stream.nextSample());
        stream.endEpoch(e);
        return end;
    }

    /** Under the producer's lock: the lane's arena, once made. */
    void arena(SharedArena made) {
        arena = made;
    }

    /** Under the producer's lock: unmaps the arena (the lane ended). */
    void unmap() {
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }

    @Override
    public void put(Batch batch) {
        SlotClaim.put(this, layout, batch);
    }

    @Override
    public SlotWriter claim() {
        return lanes.steps().claim(this, nextSeq, slots);
    }

    /** Under the producer's lock: slot {@code slot} of the lane's arena is claimed for the next batch. */
    SlotClaim claimed(long seq, int slot) {
        nextSeq = seq + 1;
        slots.claim(seq);
        return new SlotClaim(
                seq, slot, layout, arena.slot(slot), (c, n) -> lanes.steps().publish(this, c, n));
    }

    /** Under the producer's lock: the batch of claim {@code c} holds {@code n} samples; its BATCH for the consumer. */
    Message.BatchReady published(SlotClaim c, int n) {
        BatchPosition p = stream.publish(c.seq, n); // the shape rules of the main stream
        slots.published(p);
        samplesLoaded += n;
        return new Message.BatchReady(seqBase + c.seq, c.slot, p.epoch(), p.index(), p.sampleStart(), n);
    }

    @Override
    public int claimsAhead() {
        return 1;
    }

    @Override
    public int lane() {
        return number;
    }

    /** The lane's consumer left, or the producer stopped: the lane's thread ends at its next step. */
    static final class LaneClosed extends RuntimeException {
        LaneClosed() {
            super(null, null, false, false);
        }
    }
}
