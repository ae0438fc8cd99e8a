package io.tensorsocket.consumer;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ConsumerState;
import io.tensorsocket.EpochIncompleteException;
import io.tensorsocket.JobRank;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.spi.ConsumerEngine;
import io.tensorsocket.spi.StreamTerms;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.ConsumerStream;
import io.tensorsocket.stream.RankShare;
import io.tensorsocket.stream.StreamGeometry;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A consumer of a producer on this host: batches are read from its arena in shared memory, announced over
 * the consumer's socket or its descriptor ring ({@link ConsumerLink}), cut to this consumer's batch size by
 * its {@link ConsumerStream}, built by {@link BatchAssembly} and released by the {@link ReleaseSchedule}.
 * Every slot it received goes back to the producer exactly once, in order.
 */
public final class LocalEngine implements ConsumerEngine {
    private final Path dir;
    private final String producer;
    private final ConsumerOptions options;
    private final ConsumerLink link;
    private final Message.Welcome welcome;
    private final ArenaRegions arenas;
    private final ConsumerStream stream;
    private final BatchAssembly assembly;
    private final StreamTerms terms;
    private final ReleaseSchedule schedule = new ReleaseSchedule();
    /** Guards the stream against a batch's release from another thread. */
    private final ReentrantLock lock = new ReentrantLock();

    private boolean closed;
    /** Whether it serves the rest of a checkpoint's epoch ({@link #resume}), after which its stream ends. */
    private boolean resumed;
    /** The protocol violation seen from the producer, if any: every later call reports it again. */
    private ProtocolException violation;

    /**
     * Joins the producer in {@code dir} (called {@code producer} in messages) as a consumer with {@code options}.
     *
     * @throws io.tensorsocket.TensorSocketException as {@link Handshake#join} says
     */
    public static LocalEngine join(Path dir, String producer, ConsumerOptions options) {
        return new LocalEngine(dir, producer, options, Handshake.join(dir, producer, options));
    }

    /**
     * Joins to be served the rest of the epoch {@code state} was taken in ({@link Checkpoints#resume}), or null where
     * nothing of it is left: the caller joins as a new consumer.
     *
     * @throws IllegalArgumentException where the state is not of this producer, batch size or rank
     */
    public static LocalEngine resume(Path dir, String producer, ConsumerOptions options, ConsumerState state) {
        Message.Resume resume = Checkpoints.resume(producer, options, state);
        if (resume == null) {
            return null;
        }
        LocalEngine e = new LocalEngine(dir, producer, options, Handshake.join(dir, producer, options, resume));
        e.stream.resumeAt(state.handed());
        e.resumed = true;
        return e;
    }

    /** Where this consumer stands, for a checkpoint ({@link Checkpoints#take}). */
    public ConsumerState state() {
        lock.lock();
        try {
            return Checkpoints.take(dir, producer, options, welcome, stream);
        } finally {
            lock.unlock();
        }
    }

    /** Whether this engine served the rest of a checkpoint's epoch and that epoch was begun: its stream is over. */
    public boolean resumedEpochBegun() {
        lock.lock();
        try {
            return resumed && stream.epochStarted();
        } finally {
            lock.unlock();
        }
    }

    private LocalEngine(Path dir, String producer, ConsumerOptions options, Handshake.Session session) {
        this.dir = dir;
        this.producer = producer;
        this.options = options;
        this.link = session.link();
        this.welcome = session.welcome();
        this.arenas = new ArenaRegions(dir, producer, welcome.sessionId(), session.arena());
        this.stream = new ConsumerStream(
                new StreamGeometry(welcome.samplesPerEpoch(), welcome.producerBatchSize()),
                welcome.slotCount(),
                options.batchSize(),
                options.dropLast(),
                welcome.startEpoch(),
                welcome.startSample(),
                shareOf(options.jobRank()));
        this.assembly =
                new BatchAssembly(welcome.tensors(), options.batchSize(), arenas, options.threadConfinedBatches());
        this.terms = new StreamTerms(
                stream.batchesPerEpoch(),
                stream.samplesPerEpoch(),
                options.batchSize(),
                welcome.producerBatchSize(),
                welcome.startMode(),
                welcome.midEpoch(),
                welcome.startEpoch(),
                welcome.startSample(),
                welcome.consumerId(),
                options.jobRank(),
                welcome.tensors(),
                welcome.source(),
                welcome.epochs(),
                link.ringHandoff() ? "ring" : "socket");
    }

    @Override
    public StreamTerms terms() {
        return terms;
    }

    private static RankShare shareOf(JobRank rank) {
        return rank == null ? RankShare.ALL : new RankShare(rank.rank(), rank.worldSize());
    }

    @Override
    public long epoch() {
        lock.lock();
        try {
            return stream.epoch();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long streamPosition(Batch batch) {
        return stream.streamPosition(batch.epoch(), batch.sampleStart());
    }

    @Override
    public long streamPosition(Batch batch, int sample) {
        return stream.streamPosition(batch.epoch(), batch.sampleStart() + sample);
    }

    @Override
    public boolean isEndOfStream() {
        lock.lock();
        try {
            if (!closed && !stream.streamEnded() && link.streamEnded()) {
                for (Message m = link.poll(); m != null; m = link.poll()) {
                    handle(m);
                }
            }
            return stream.isEndOfStream(welcome.epochs());
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void reportProgress(long epoch, long samples, long waitNanos, long workNanos) {
        link.sendQuietly(new Message.Progress(epoch, samples, waitNanos, workNanos));
    }

    @Override
    public Iterator<Batch> iterator() {
        lock.lock();
        try {
            link.check();
            schedule.releaseCurrent();
            if (stream.epochStarted()) {
                skipTo(stream.epochEnd());
            }
            handleArrived();
            if (stream.isEndOfStream(welcome.epochs())) {
                long got = stream.epochStarted() ? stream.epoch() - welcome.startEpoch() + 1 : 0;
                throw new ProducerGoneException(StreamEnd.noMoreEpochs(producer, welcome, got));
            }
            stream.beginEpoch();
            return new Epoch(stream.epochBase());
        } finally {
            lock.unlock();
        }
    }

    /** One epoch; a newer iterator ends it. */
    private final class Epoch implements Iterator<Batch> {
        private final long base;

        Epoch(long base) {
            this.base = base;
        }

        @Override
        public boolean hasNext() {
            lock.lock();
            try {
                releaseConsumed();
                return stream.epochBase() == base && (nextBatchSize() > 0 || wholeOrThrow());
            } finally {
                lock.unlock();
            }
        }

        @Override
        public Batch next() {
            lock.lock();
            try {
                releaseConsumed();
                schedule.releaseCurrent();
                int n = stream.epochBase() == base ? nextBatchSize() : 0;
                if (n == 0 && (stream.epochBase() != base || !wholeOrThrow())) {
                    throw new NoSuchElementException("epoch " + stream.epoch() + " has no more batches");
                }
                ConsumerStream.BatchPlan plan = stream.take(n);
                long pinned = plan.single() ? plan.pieces().getFirst().seq() : -1;
                Batch b = assembly.assemble(plan, schedule::closeRetired, () -> onBatchClosed(pinned));
                if (schedule.handOut(b)) {
                    releaseConsumed(); // the slots a gathered batch was copied from
                }
                return b;
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * The epoch's batches ran out: false where it was whole; throws where the stream ended before it was (the
     * producer could not complete this consumer's last epoch).
     */
    private boolean wholeOrThrow() {
        long missing = stream.missing();
        if (missing > 0 && stream.position() == stream.epochBase()) { // nothing of it came: the stream ended before
            throw new ProducerGoneException(
                    StreamEnd.noMoreEpochs(producer, welcome, stream.epoch() - welcome.startEpoch()));
        }
        if (missing > 0) {
            throw new EpochIncompleteException(
                    StreamEnd.shortEpoch(producer, welcome, stream, missing), stream.epoch(), missing);
        }
        return false;
    }

    /** Samples in this epoch's next batch, waiting for them; 0 at the end of the epoch (or of the stream). */
    private int nextBatchSize() {
        link.check();
        handleArrived();
        while (true) {
            int n = stream.nextBatch();
            if (n == 0) {
                releaseConsumed(); // the epoch is over: nothing may stay held while the caller does other work
            }
            if (n != ConsumerStream.NEED_MORE) {
                return n;
            }
            receiveOne();
        }
    }

    /**
     * Applies the messages that arrived already, without waiting: a MOVE among them is answered at the consumer's next
     * batch, not once it used up the batches it holds, which the others would wait for. A violation among them is
     * reported where the consumer needs the message it spoiled: the valid batches before it are handed out first.
     */
    private void handleArrived() {
        if (violation != null) {
            return; // reported once the batches before it are used up and the consumer needs the next
        }
        try {
            for (Message m = link.poll(); m != null; m = link.poll()) {
                handle(m);
            }
        } catch (ProtocolException e) {
            violation = e;
        }
    }

    /** Waits for the next message from the producer and applies it. */
    private void receiveOne() {
        if (violation != null) {
            throw violation;
        }
        releaseConsumed(); // before waiting: the producer may be waiting for these very slots
        Message m = link.take(options.batchTimeout().toNanos(), "batch data");
        if (link.waited()) {
            schedule.waited();
        }
        try {
            handle(m);
        } catch (ProtocolException e) {
            violation = e;
            throw e;
        }
    }

    private void handle(Message m) {
        switch (m) {
            case Message.BatchReady r -> {
                try {
                    stream.accept(
                            new BatchPosition(r.seq(), r.epoch(), r.index(), r.sampleStart(), r.samples()), r.slot());
                } catch (IllegalArgumentException e) {
                    throw new ProtocolException("producer '" + producer + "' sent " + e.getMessage());
                }
            }
            case Message.EpochEnd e -> {
                if (e.samples() != welcome.samplesPerEpoch()) {
                    throw new ProtocolException("producer '" + producer + "' ended epoch " + e.epoch() + " after "
                            + e.samples() + " samples, not " + welcome.samplesPerEpoch());
                }
            }
            case Message.EndOfStream e -> stream.endOfStream();
            case Message.Move mv -> move(mv);
            default ->
                throw new ProtocolException(
                        "unexpected " + m.getClass().getSimpleName() + " from producer '" + producer + "'");
        }
    }

    /**
     * The producer moved this consumer to a lane (it fell behind the others): maps the lane's arena, gives back the
     * batches it has not begun and tells the producer where its lane starts. A move to lane 0 is back to the main
     * stream (it caught up): it keeps everything and says nothing.
     */
    private void move(Message.Move mv) {
        if (mv.lane() == 0) {
            try {
                stream.moveTo(mv.seqBase(), 0, 0, mv.slotCount(), false);
            } catch (IllegalArgumentException e) {
                throw new ProtocolException("producer '" + producer + "' sent " + e.getMessage());
            }
            return;
        }
        int base;
        try {
            base = arenas.mapLane(mv.lane(), mv.slotCount());
        } catch (IOException e) {
            // What the producer said after the MOVE (an eviction: it waited for the answer too long) explains a
            // lane that is gone best.
            link.awaitReceiverEnd(500);
            link.check();
            throw new ProducerGoneException(
                    "producer '" + producer + "' moved this consumer to lane " + mv.lane()
                            + ", whose arena could not be mapped: " + e.getMessage(),
                    e);
        }
        long position;
        try {
            // a lane shared with others may be past its first batch: its batches come in order from any of its seqs
            position = stream.moveTo(-1, mv.seqBase(), base, mv.slotCount(), true);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException("producer '" + producer + "' sent " + e.getMessage());
        }
        link.send(List.of(new Message.Moved(position)));
    }

    /** Consumes samples up to {@code target} without handing them out, releasing what they occupied. */
    private void skipTo(long target) {
        // Skips what has arrived, releases it, then waits for more: waiting for the whole range first would
        // hold every slot it occupies, and a range longer than the arena could then never arrive.
        while (!stream.skipArrived(target)) {
            releaseConsumed();
            if (stream.streamEnded()) {
                return;
            }
            receiveOne();
        }
        releaseConsumed();
    }

    private void onBatchClosed(long pinned) {
        lock.lock();
        try {
            if (pinned >= 0) {
                stream.unpin(pinned);
            }
            if (!closed && (!schedule.hasRetired() || lock.getHoldCount() == 1)) {
                releaseConsumed(); // but not a release that waits for the consumer's next call
            }
        } catch (TensorSocketException e) {
            // the producer is gone; the next call on the consumer reports it, closing a batch does not
        } finally {
            lock.unlock();
        }
    }

    /**
     * Closes the retired batch's scope, then tells the producer, in one write, which batches this consumer
     * is done with (see {@link ReleaseSchedule} for when this may run).
     */
    private void releaseConsumed() {
        schedule.closeRetired(); // first: a slot goes back only once no view of it can be read
        List<Message> releases = null;
        for (long seq = stream.pollReleasable(); seq >= 0; seq = stream.pollReleasable()) {
            if (releases == null) {
                releases = new ArrayList<>(2);
            }
            releases.add(new Message.Release(seq));
        }
        if (releases != null) {
            link.send(releases);
        }
    }

    @Override
    public void abortWait() {
        link.abortWait();
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            // a thread-confined batch closed from another thread keeps its views' scope open: the memory they show
            // must then stay mapped, or reading one would crash the JVM instead of failing
            boolean keepMapped = schedule.heldByAnotherThread();
            schedule.closeAll();
            link.close();
            if (!keepMapped) {
                arenas.close();
                assembly.close();
            }
        } finally {
            lock.unlock();
        }
    }
}
