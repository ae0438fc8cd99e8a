package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchSink;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.StartMode;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.spi.UpstreamBoundaries;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.JoinRule;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StartPoint;
import io.tensorsocket.stream.StreamGeometry;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The producer's bookkeeping: which slot holds which batch, who still reads it, where the stream is, and
 * who is attached. All of it lives here, behind one lock; the arena itself holds only data.
 *
 * <p>Slots are used as a ring ({@link SlotTable}). A slot is reused only when every consumer that was sent
 * its batch has released it and the batch has left the rubber-band window (the {@code R} most recently
 * published batches). With at most {@code L} claims outstanding, {@code N >= R + L} guarantees the slot
 * about to be reused is never inside the window. Positions in the stream and the join rule are the stream
 * model's ({@link ProducerStream}, {@link JoinRule}), who may join is {@link Admission}'s, the wait for a free
 * slot {@link SlotWait}'s; this class adds the consumers and the order of claims and publishes.
 *
 * <p>A consumer's stream events go to its {@link Outlet}: the descriptor ring it was given (an entry in
 * shared memory and, only if it sleeps, a futex wake), or its socket.
 *
 * <p>Frames are written to consumers' sockets under the lock, so that every consumer sees its WELCOME,
 * retained batches, new batches and epoch ends in stream order. Those writes cannot block the lock: the
 * frames in flight to one consumer are bounded. A BATCH_READY goes out only for a slot the consumer does
 * not hold yet, so at most {@code N} of them (plus one EPOCH_END per epoch they span and one END) are
 * unanswered at any time, each under 100 bytes: far less than a Unix socket's send buffer (over 200 KiB
 * by default), which the consumer drains as it reads. A consumer that stops reading stops releasing, and
 * is evicted by the stall timeout rather than blocking a write.
 */
public final class ProducerCore implements BatchSink {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();

    private final SharedArena arena;
    private final ArenaLayout layout;
    private final ServingRules rules;
    private final String producerName;
    private final StreamGeometry geometry;
    private final ProducerStream stream;
    private final JoinRule joinRule;
    private final SlotTable slots;
    private final Admission admission;
    private final Attached consumers;
    private final PaceWatch pace;
    private final ServingState state = new ServingState();
    private final Joining joining;
    private final JobFormation jobs;
    private final RelayJoins relays;
    private final StartWaits waits;
    private final SlotWait slotWait;
    private final Lanes lanes;
    private final Tails tails;
    /** The seed of its source's shuffles, for its status, or null. */
    private Long seed;

    private final ArrayDeque<SlotClaim> claims = new ArrayDeque<>();

    private volatile Supplier<ProducerStatus.Cache> cacheFigures = () -> ProducerStatus.Cache.NONE;
    private long nextSeq;
    private final long startedNanos = System.nanoTime();
    private final RateWindow loaderRate = new RateWindow();

    public ProducerCore(SharedArena arena, ServingRules rules) {
        this.arena = arena;
        this.layout = arena.layout();
        this.rules = rules;
        this.producerName = rules.producerName();
        this.geometry =
                new StreamGeometry(rules.samplesPerEpoch(), layout.batch().batchSize());
        this.stream = new ProducerStream(geometry, rules.firstEpoch());
        this.joinRule = new JoinRule(rules.rubberBand(), rules.midEpoch());
        this.admission = new Admission(producerName, rules.epochs(), joinRule);
        this.slots = new SlotTable(layout.slotCount());
        this.consumers = new Attached(slots, geometry, changed::signalAll, this::left);
        this.relays = new RelayJoins(rules, geometry, consumers);
        this.joining = new Joining(rules, stream, admission, geometry, slots, consumers, relays, state, changed);
        this.jobs = new JobFormation(new JobRoster(producerName, rules.jobTimeout()), lock, joining);
        this.waits = new StartWaits(rules, consumers, changed, this::checkOpen);
        this.pace = new PaceWatch(producerName, layout.slotCount(), layout.slotBytes());
        this.tails = new Tails(geometry, consumers);
        this.lanes = new Lanes(
                lock, changed, rules, geometry, layout, slots, consumers, stream, tails, HostCpu.ofThisHost());
        this.slotWait = new SlotWait(rules, state, slots, consumers, waits, pace, lanes, this::checkOpen);
    }

    /** The seed its source draws its shuffles from, for its status; null where none says its order. */
    public void reportsSeed(Long seed) {
        locked(() -> this.seed = seed);
    }

    /** Where {@link #status} reads the source's decoded-sample cache figures. Call before serving. */
    public void reportsCache(Supplier<ProducerStatus.Cache> figures) {
        cacheFigures = figures;
    }

    /** Hands stream events to consumers that ask for it through {@code rings}. Call before serving. */
    public void handOffThrough(DescriptorRings rings) {
        locked(() -> consumers.ringsFrom(new RingPool(rings)));
    }

    /** Serves consumers that fall behind from lanes of their own ({@link Lanes}). Call before serving. */
    public void serveLanes(Lanes.Supply supply) {
        locked(() -> lanes.serve(supply));
    }

    /**
     * Asks {@code upstream} to keep the boundaries of this relay's consumers that join mid-epoch, so that they start
     * exact (see {@link UpstreamBoundaries}). Call before serving.
     */
    public void keepBoundariesUpstream(UpstreamBoundaries upstream) {
        locked(() -> relays.relay(upstream));
    }

    /** The largest consumer batch size that can never deadlock: see {@link StreamGeometry#slotsNeeded(int)}. */
    int maxConsumerBatch() {
        return geometry.maxConsumerBatch(slots.count(), rules.claimsAhead());
    }

    /** Slots a consumer batch of {@code b} samples may span at once. */
    int slotsNeeded(int b) {
        return geometry.slotsNeeded(b);
    }

    // ---------------------------------------------------------------- producer thread: claims and publishing

    @Override
    public void put(Batch batch) {
        SlotClaim.put(this, layout, batch);
    }

    @Override
    public SlotWriter claim() {
        lock.lock();
        try {
            checkOpen();
            if (claims.size() >= rules.claimsAhead()) {
                throw new IllegalStateException("the source holds " + claims.size()
                        + " unpublished claims; publish one first or raise the producer's claimsAhead");
            }
            long seq = nextSeq;
            int slot = slots.slotOf(seq);
            slotWait.awaitFree(slot, claims::isEmpty);
            nextSeq++;
            slots.claim(seq);
            SlotClaim c = new SlotClaim(seq, slot, layout, arena.slot(slot), this::publish);
            claims.addLast(c);
            return c;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int claimsAhead() {
        return rules.claimsAhead();
    }

    /** See {@link SlotWait#awaitingRelease}. */
    boolean awaitingRelease() {
        return slotWait.awaitingRelease();
    }

    /** Sets what tells the reader that the producer started waiting for a release. */
    void onReleaseWanted(Runnable r) {
        slotWait.onReleaseWanted(r);
    }

    /** Sets what tells the source that the producer pauses, its consumers gone ({@code BatchSource.paused}). */
    void onPaused(Runnable r) {
        slotWait.onPaused(r);
    }

    private void publish(SlotClaim c, int samples) {
        lock.lock();
        try {
            if (c.samples != 0) {
                throw new IllegalStateException("slot of batch " + c.seq + " was already published");
            }
            if (samples < 1 || samples > geometry.producerBatchSize()) {
                throw new IllegalArgumentException(
                        "a batch holds 1 to " + geometry.producerBatchSize() + " samples, not " + samples);
            }
            c.samples = samples;
            if (state.totalPublished == 0 && claims.peekFirst() == c) {
                waits.awaitStartGrace(state.firstAttachNanos);
            }
            while (!claims.isEmpty() && claims.peekFirst().samples != 0) {
                publishInOrder(claims.pollFirst());
            }
        } finally {
            lock.unlock();
        }
    }

    private void publishInOrder(SlotClaim c) {
        checkOpen();
        BatchPosition p = stream.publish(c.seq, c.samples);
        slots.published(p);
        consumers.published(p, slots.ready(p));
        state.totalPublished++;
        state.totalSamples += c.samples;
        loaderRate.record(System.nanoTime(), state.totalSamples);
        changed.signalAll();
    }

    /** Called by the producer loop when the source returned from an epoch. */
    public void endEpoch(long epoch) {
        lock.lock();
        try {
            checkOpen();
            if (!claims.isEmpty()) {
                throw new IllegalStateException("the source returned from epoch " + epoch + " with " + claims.size()
                        + " claimed slots it never published");
            }
            Message.EpochEnd end = new Message.EpochEnd(epoch, stream.nextIndex(), stream.nextSample());
            stream.endEpoch(epoch);
            consumers.broadcast(end);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The join offsets of the exact consumers attached now (sorted): the chunks the order of epoch {@code epoch}, about
     * to be drawn, keeps. The producer loop asks after {@link #endEpoch} and before it emits that epoch, so every
     * consumer that joined in the epoch that ended is counted, and every later one joins at an epoch start or in
     * {@code epoch}.
     */
    public int[] lateJoinBoundaries(long epoch) {
        return locked(() -> {
            relays.drew(epoch);
            return consumers.boundaries();
        });
    }

    /** The producer loop drew {@code order} for epoch {@code epoch}, which it emits next: lanes may load it again. */
    public void drew(long epoch, int[] order, int[] boundaries) {
        locked(() -> lanes.drew(epoch, order, boundaries));
    }

    /** For consumer {@code consumerId}, which relays this stream: see {@link RelayJoins#keepFor}. */
    public UpstreamBoundaries.Answer keepBoundaryForRelay(int consumerId, long epoch, long sample) {
        return locked(() -> relays.keepFor(consumers.get(consumerId), epoch, sample));
    }

    /** The relay's consumer that joined at {@code sample} left: see {@link RelayJoins#releaseFor}. */
    public void releaseBoundaryForRelay(int consumerId, long sample) {
        locked(() -> relays.releaseFor(consumers.get(consumerId), sample));
    }

    /**
     * The stream published its {@code epochs} epochs: no consumer joins any more, and each attached one's stream ends
     * with its last owed epoch ({@link Tails}). Returns the longest tail owed.
     */
    Tails.Owed owedTails(long epochs) {
        return locked(() -> {
            state.epochsPublished = true;
            return tails.decide(epochs);
        });
    }

    /**
     * The order of epoch {@code epochs} (the one after the stream's last) was drawn for the tails owed, or null where
     * none is: lanes load their members' from it. Returns the longest tail the main stream's consumers are owed.
     */
    int tailsDrawn(long epochs, int[] order, int[] boundaries) {
        return locked(() -> {
            lanes.tailsDecided(epochs, order, boundaries);
            return order == null ? 0 : tails.main(epochs);
        });
    }

    /** Marks the stream complete and tells every consumer. */
    public void endStream(long epochsRun) {
        locked(() -> {
            state.streamEnded = true;
            lanes.mainEnded(epochsRun);
            consumers.broadcast(new Message.EndOfStream(epochsRun));
            changed.signalAll();
        });
    }

    /** Waits until every consumer has left, at most {@code timeout} after the last lane ended. */
    public void awaitConsumersGone(Duration timeout) {
        lock.lock();
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (consumers.count() > 0 && state.closedReason == null) {
                if (lanes.serving()) { // a consumer in a lane still reads its epochs: the drain starts after
                    deadline = System.nanoTime() + timeout.toNanos();
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                changed.awaitNanos(Math.min(left, 1_000_000_000L));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** Stops everything: waiting calls throw {@link ProducerStopped}; consumers get {@code error} if given. */
    public void shutdown(String reason, Message.Error error) {
        lock.lock();
        try {
            if (state.closedReason != null) {
                return;
            }
            state.closedReason = reason;
            state.closedError = error;
            consumers.dismissAll(reason, error);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (state.closedReason != null) {
            throw new ProducerStopped(state.closedReason);
        }
    }

    // ---------------------------------------------------------------- connection threads: joins, releases, leaves

    /**
     * Registers a consumer and decides where it starts: see {@link Joining}.
     *
     * @return null if the consumer was refused (an error was sent)
     */
    ConsumerSession join(
            int id,
            MessageChannel channel,
            Message.Hello hello,
            String user,
            Function<StartPoint, Message.Welcome> welcome) {
        return locked(() -> joining.join(id, channel, hello, user, welcome));
    }

    /**
     * A rank of a job said HELLO: refused (an error was sent; null), or a candidate that waits for the rest of its
     * job ({@link #awaitJob}); see {@link JobFormation}.
     */
    JobRoster.Candidate joinRank(
            int id,
            MessageChannel channel,
            Message.Hello hello,
            String user,
            Function<StartPoint, Message.Welcome> welcome) {
        return locked(() -> jobs.arrive(id, channel, hello, user, welcome));
    }

    /**
     * A consumer that resumes from a checkpoint said RESUME, then HELLO: welcomed at its epoch's start with the rest of
     * the epoch loaded by index on a lane of its own ({@link ResumePlan}), or refused saying why (null).
     */
    ConsumerSession resume(
            int id,
            MessageChannel channel,
            Message.Hello hello,
            Message.Resume resume,
            String user,
            Function<StartPoint, Message.Welcome> welcome) {
        return locked(() -> {
            Message.Error refusal = joining.refusalWhileClosing();
            String why = refusal != null ? null : lanes.cannotResume(hello);
            ResumePlan plan = null;
            if (refusal == null && why == null) {
                try {
                    plan = ResumePlan.of(resume, hello, geometry, lanes.source(), producerName);
                } catch (ResumePlan.Refused e) {
                    why = e.getMessage();
                }
            } else if (why != null) {
                why = "producer '" + producerName + "' cannot resume a consumer's epoch: " + why;
            }
            if (refusal == null && why != null) {
                refusal = new Message.Error(Message.ErrorCode.BAD_REQUEST, why);
            }
            if (refusal != null) {
                channel.sendQuietly(refusal);
                channel.close();
                return null;
            }
            long x = geometry.epochOf(resume.epochBase());
            long s = resume.epochBase() - geometry.position(x, 0);
            StartPoint start = StartPoint.of(s == 0 ? StartMode.EPOCH_START : StartMode.EXACT, x, s);
            ConsumerSession c = joining.welcome(id, channel, hello, user, start, welcome);
            if (c != null) {
                c.resuming = plan;
                c.position = plan.from();
                c.until = plan.end();
                lanes.resume(c, plan);
            }
            return c;
        });
    }

    /** Waits, on {@code c}'s own connection thread, until its job formed: see {@link JobFormation#await}. */
    ConsumerSession awaitJob(JobRoster.Candidate c) throws InterruptedException {
        return jobs.await(c);
    }

    /** A consumer left: if it was a rank of a running job that died, the job's other ranks fail too. */
    private void left(ConsumerSession s, String why) {
        pace.left(s);
        lanes.left(s);
        relays.releaseUpstream(s.start);
        if (state.closedReason != null) {
            return; // every consumer is being told why already
        }
        jobs.left(s, why);
    }

    /**
     * Records that {@code s} released the first {@code n} of {@code seqs}.
     *
     * @return the first of them {@code s} did not hold (a protocol violation), or -1
     */
    long release(ConsumerSession s, long[] seqs, int n) {
        lock.lock();
        try {
            if (!s.attached) {
                return -1; // releases racing with eviction: nothing left to do
            }
            long result = consumers.release(s, seqs, n);
            if (result == -1) {
                changed.signalAll(); // only a free slot is worth waking the producer for, not each of K releases
            }
            return Math.max(-1, result);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Sends a HEARTBEAT to every consumer that was sent nothing for {@code idleNanos} and has fewer than
     * {@link ConsumerSession#MAX_UNANSWERED_HEARTBEATS} unanswered. Called by the producer's heartbeat thread,
     * which never waits for the loader: a slow loader keeps heartbeats going, while a producer stopped or
     * deadlocked (holding this lock) sends none, which is what its consumers notice.
     */
    void heartbeat(long idleNanos) {
        locked(() -> consumers.heartbeat(System.nanoTime(), idleNanos));
    }

    /** {@code s} answered its MOVE: see {@link Lanes#moved}; what is wrong with the answer, or null. */
    String moved(ConsumerSession s, long position) {
        return locked(() -> lanes.moved(s, position));
    }

    /** Records a consumer's report about itself (for {@link #status}). */
    void progress(ConsumerSession s, Message.Progress p) {
        locked(() -> s.progress(p));
    }

    /** A consistent snapshot of the producer and its consumers, taken under the lock. */
    public ProducerStatus status(long pid, String source) {
        lock.lock();
        try {
            long now = System.nanoTime();
            return new ProducerStatus(
                    Math.max(0, pid),
                    producerName,
                    source,
                    state.phase(consumers.count(), rules.minConsumers()),
                    layout.batch().batchSize(),
                    rules.samplesPerEpoch(),
                    rules.epochs(),
                    stream.nextEpoch(),
                    stream.nextSample(),
                    state.totalPublished,
                    state.totalSamples,
                    loaderRate.perSecond(now),
                    slots.count(),
                    layout.slotBytes(),
                    slots.inUse(stream.publishedSeq(), joinRule),
                    rules.rubberBand(),
                    (int) Math.min(rules.rubberBand(), state.totalPublished),
                    now - startedNanos,
                    consumers.count(),
                    consumers.evictions(),
                    joinRule.midEpoch(),
                    cacheFigures.get(),
                    consumers.status(now, stream.nextPosition(), pace::share),
                    seed);
        } finally {
            lock.unlock();
        }
    }

    /** Removes a consumer and releases everything it held. Idempotent. */
    void leave(ConsumerSession s, String why) {
        locked(() -> consumers.detach(s, why));
    }

    public int consumerCount() {
        return locked(() -> consumers.count());
    }

    public long batchesPublished() {
        return locked(() -> state.totalPublished);
    }

    private <T> T locked(Supplier<T> f) {
        lock.lock();
        try {
            return f.get();
        } finally {
            lock.unlock();
        }
    }

    private void locked(Runnable r) {
        lock.lock();
        try {
            r.run();
        } finally {
            lock.unlock();
        }
    }
}
