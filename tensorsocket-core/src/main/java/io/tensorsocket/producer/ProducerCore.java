package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.StartMode;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.Tensor;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.BulkCopy;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.spi.UpstreamBoundaries;
import io.tensorsocket.stream.JoinRule;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StartPoint;
import io.tensorsocket.stream.StreamGeometry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * The producer's bookkeeping: which slot holds which batch, who still reads it, where the stream is, and
 * who is attached. All of it lives here, behind one lock; the arena itself holds only data.
 *
 * <p>Slots are used as a ring ({@link SlotTable}). A slot is reused only when every consumer that was sent
 * its batch has released it and the batch has left the rubber-band window (the {@code R} most recently
 * published batches). With at most {@code L} claims outstanding, {@code N >= R + L} guarantees the slot
 * about to be reused is never inside the window. Positions in the stream and the join rule are the stream
 * model's ({@link ProducerStream}, {@link JoinRule}), who may join is {@link Admission}'s; this class adds
 * the consumers and the waiting.
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
    private static final Logger log = LoggerFactory.getLogger(ProducerCore.class);

    /** Thrown inside the producer thread when the producer is being closed. */
    public static final class Stopped extends RuntimeException {
        Stopped(String message) {
            super(message, null, false, false);
        }
    }

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
    private final JobRoster roster;
    private final StartWaits waits;
    private final ArrayDeque<SlotClaim> claims = new ArrayDeque<>();

    private volatile boolean awaitingRelease;
    private volatile Runnable releaseWanted = () -> { };
    private long nextSeq;
    private boolean streamEnded;
    private String closedReason;
    private long totalPublished;
    private long totalSamples;
    /** When the first consumer attached ({@link System#nanoTime()}), 0 before: the start grace counts from it. */
    private long firstAttachNanos;
    private final long startedNanos = System.nanoTime();
    /** The epoch whose order was drawn last ({@link #lateJoinBoundaries}), -1 before the first. */
    private long drawnEpoch = -1;
    /** The relayed stream's producer, asked to keep mid-epoch joiners' boundaries; null for a producer of its own order. */
    private UpstreamBoundaries upstream;
    private final RateWindow loaderRate = new RateWindow();

    public ProducerCore(SharedArena arena, ServingRules rules) {
        this.arena = arena;
        this.layout = arena.layout();
        this.rules = rules;
        this.producerName = rules.producerName();
        this.geometry = new StreamGeometry(rules.samplesPerEpoch(), layout.batch().batchSize());
        this.stream = new ProducerStream(geometry, rules.firstEpoch());
        this.joinRule = new JoinRule(rules.rubberBand(), rules.midEpoch());
        this.admission = new Admission(producerName, rules.epochs(), joinRule);
        this.slots = new SlotTable(layout.slotCount());
        this.consumers = new Attached(slots, geometry, changed::signalAll, this::left);
        this.roster = new JobRoster(producerName, rules.jobTimeout());
        this.waits = new StartWaits(rules, consumers, changed, this::checkOpen);
    }

    /** Hands stream events to consumers that ask for it through {@code rings}. Call before serving. */
    public void handOffThrough(DescriptorRings rings) {
        locked(() -> consumers.ringsFrom(new RingPool(rings)));
    }

    /**
     * Asks {@code upstream} to keep the boundaries of this relay's consumers that join mid-epoch, so that they start
     * exact (see {@link UpstreamBoundaries}). Call before serving.
     */
    public void keepBoundariesUpstream(UpstreamBoundaries upstream) {
        locked(() -> this.upstream = upstream);
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
        BatchLayout bl = layout.batch();
        bl.check(batch);
        SlotClaim c = (SlotClaim) claim();
        for (int t = 0; t < bl.tensors().size(); t++) {
            Tensor src = batch.tensor(bl.tensors().get(t).name());
            BulkCopy.copy(src.data(), 0, c.tensor(t), 0, src.byteSize());
        }
        c.publish(batch.size());
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
            awaitFreeSlot(slot);
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

    /** Waits until {@code slot} is free and a consumer is attached, evicting whoever stalls it too long. */
    private void awaitFreeSlot(int slot) {
        long stalledSince = System.nanoTime();
        while (true) {
            checkOpen();
            int needed = totalPublished == 0 && claims.isEmpty() ? rules.minConsumers() : 1;
            if (consumers.count() < needed) {
                waits.awaitConsumers(needed, totalPublished > 0);
                stalledSince = System.nanoTime();
                continue;
            }
            if (slots.isFree(slot)) {
                awaitingRelease = false;
                return;
            }
            long waited = System.nanoTime() - stalledSince;
            long left = rules.stallTimeout().toNanos() - waited;
            if (left <= 0) {
                consumers.evictHoldersOf(slots.seqIn(slot), producerName, rules.stallTimeout());
                stalledSince = System.nanoTime();
                continue;
            }
            awaitingRelease = true;
            releaseWanted.run();
            waits.awaitNanos(left);
        }
    }

    /**
     * Whether the producer waits for a slot that consumers still hold: only then is a release wanted at
     * once; otherwise the {@link ConsumerReader} lets releases gather and reads them in fewer wake-ups.
     */
    boolean awaitingRelease() {
        return awaitingRelease;
    }

    /** Sets what tells the reader that the producer started waiting for a release. */
    void onReleaseWanted(Runnable r) {
        this.releaseWanted = r;
    }

    private void publish(SlotClaim c, int samples) {
        lock.lock();
        try {
            if (c.samples != 0) {
                throw new IllegalStateException("slot of batch " + c.seq + " was already published");
            }
            if (samples < 1 || samples > geometry.producerBatchSize()) {
                throw new IllegalArgumentException("a batch holds 1 to " + geometry.producerBatchSize() + " samples, not " + samples);
            }
            c.samples = samples;
            if (totalPublished == 0 && claims.peekFirst() == c) {
                waits.awaitStartGrace(firstAttachNanos);
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
        consumers.published(p, ready(p));
        totalPublished++;
        totalSamples += c.samples;
        loaderRate.record(System.nanoTime(), totalSamples);
        changed.signalAll();
    }

    private Message.BatchReady ready(BatchPosition p) {
        return new Message.BatchReady(p.seq(), slots.slotOf(p.seq()), p.epoch(), p.index(), p.sampleStart(),
                p.samples());
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
        lock.lock();
        try {
            drawnEpoch = epoch;
            return consumers.boundaries();
        } finally {
            lock.unlock();
        }
    }

    /**
     * For consumer {@code consumerId}, which relays this stream: keeps offset {@code sample} of epoch {@code epoch}
     * as a boundary of the next epochs for one of the relay's own consumers, which joined the relay there (see
     * {@link UpstreamBoundaries}). It can while the order of epoch {@code epoch + 1} is not drawn yet.
     *
     * @return KEPT; TOO_LATE if that order is drawn (or {@code epoch} is not the one being served); UNAVAILABLE if
     *         this producer does not choose its order (it is a relay itself, or its source fixes it), no such
     *         consumer is attached, or the offset is not inside an epoch
     */
    public UpstreamBoundaries.Answer keepBoundaryForRelay(int consumerId, long epoch, long sample) {
        lock.lock();
        try {
            ConsumerSession s = consumers.get(consumerId);
            // a relay does not choose its order, so the consumers of a relay of a relay roll
            boolean choosesOrder = rules.midEpoch() == StartMode.EXACT && upstream == null;
            if (!choosesOrder || s == null || sample <= 0 || sample >= geometry.samplesPerEpoch()) {
                return UpstreamBoundaries.Answer.UNAVAILABLE;
            }
            if (epoch != drawnEpoch) {
                return UpstreamBoundaries.Answer.TOO_LATE;
            }
            consumers.keepForRelay(s, (int) sample);
            log.info("{} relays the stream: keeping its joiner's boundary at sample {} from epoch {} on", s.describe(),
                    sample, epoch + 1);
            return UpstreamBoundaries.Answer.KEPT;
        } finally {
            lock.unlock();
        }
    }

    /** The relay's consumer that joined at {@code sample} left: the boundary kept for it goes. */
    public void releaseBoundaryForRelay(int consumerId, long sample) {
        lock.lock();
        try {
            ConsumerSession s = consumers.get(consumerId);
            boolean inside = sample > 0 && sample < geometry.samplesPerEpoch();
            if (s != null && inside && consumers.releaseForRelay(s, (int) sample)) {
                log.info("{} relays the stream: lets its joiner's boundary at sample {} go", s.describe(), sample);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Marks the stream complete and tells every consumer. */
    public void endStream(long epochsRun) {
        lock.lock();
        try {
            streamEnded = true;
            consumers.broadcast(new Message.EndOfStream(epochsRun));
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Waits until every consumer has left, at most {@code timeout}. */
    public void awaitConsumersGone(Duration timeout) {
        lock.lock();
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (consumers.count() > 0 && closedReason == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** Stops everything: waiting calls throw {@link Stopped}; consumers get {@code error} if given. */
    public void shutdown(String reason, Message.Error error) {
        lock.lock();
        try {
            if (closedReason != null) {
                return;
            }
            closedReason = reason;
            consumers.dismissAll(reason, error);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (closedReason != null) {
            throw new Stopped(closedReason);
        }
    }

    // ---------------------------------------------------------------- connection threads: joins, releases, leaves

    /**
     * Registers a consumer and decides where it starts. The welcome and the retained batches are sent here,
     * under the lock, so no batch published meanwhile can slip in before them.
     *
     * @return null if the consumer was refused (an error was sent)
     */
    ConsumerSession join(int id, MessageChannel channel, Message.Hello hello, String user,
                         Function<StartPoint, Message.Welcome> welcome) {
        lock.lock();
        try {
            Admission.Verdict verdict = admit(hello);
            if (verdict instanceof Admission.Verdict.Refused(Message.Error refusal)) {
                channel.sendQuietly(refusal);
                channel.close();
                return null;
            }
            StartPoint start = throughUpstream(((Admission.Verdict.Admitted) verdict).start(), 1);
            ConsumerSession s = welcome(id, channel, hello, user, start, welcome);
            if (s == null) {
                releaseUpstream(start);
            }
            return s;
        } finally {
            lock.unlock();
        }
    }

    private Admission.Verdict admit(Message.Hello hello) {
        if (rules.epochs() > 0 && stream.nextEpoch() >= rules.epochs()) {
            streamEnded = true;
        }
        return admission.decide(stream, hello.startPolicy(), closedReason, streamEnded);
    }

    /**
     * A relay's start for {@code n} consumers joining at {@code start} together: an exact mid-epoch start stays exact
     * if the upstream keeps its boundary, becomes the next epoch start if the upstream drew its next order already
     * (rolling if this was the last epoch), and rolls if the upstream cannot keep boundaries.
     */
    private StartPoint throughUpstream(StartPoint start, int n) {
        if (upstream == null || start.mode() != StartMode.EXACT) {
            return start;
        }
        UpstreamBoundaries.Answer answer = upstream.keep(start.epoch(), (int) start.sample(), n);
        StartPoint rolling = StartPoint.of(StartMode.ROLLING, start.epoch(), start.sample());
        return switch (answer) {
            case KEPT -> start;
            case TOO_LATE -> {
                log.info("the upstream drew its next epoch's order before it could keep the boundary at sample {} of"
                        + " epoch {}: the joiner starts at the next epoch start", start.sample(), start.epoch());
                yield rules.epochs() == 0 || start.epoch() + 1 < rules.epochs()
                        ? StartPoint.of(StartMode.EPOCH_START, start.epoch() + 1, 0) : rolling;
            }
            case UNAVAILABLE -> {
                log.info("the upstream cannot keep the boundary at sample {} of epoch {}: the joiner rolls",
                        start.sample(), start.epoch());
                yield rolling;
            }
        };
    }

    /** A consumer that started at {@code start} left: the upstream boundary kept for it goes. */
    private void releaseUpstream(StartPoint start) {
        if (upstream != null && start != null && start.mode() == StartMode.EXACT) {
            upstream.release((int) start.sample());
        }
    }

    /** Welcomes a consumer admitted at {@code start} and hands it the retained batches; null if it cannot be reached. */
    private ConsumerSession welcome(int id, MessageChannel channel, Message.Hello hello, String user, StartPoint start,
                                    Function<StartPoint, Message.Welcome> welcome) {
        ConsumerSession s = new ConsumerSession(id, channel, hello);
        s.user = user;
        s.position = geometry.position(start.epoch(), start.sample());
        s.start = start;
        s.startMode = start.mode();
        consumers.prepare(s);
        if (!s.send(welcome.apply(start).forConsumer(id, s.events.ringIndex()))) {
            consumers.unprepare(s);
            channel.close();
            return null;
        }
        consumers.add(s);
        if (firstAttachNanos == 0) {
            firstAttachNanos = System.nanoTime();
        }
        for (long q = start.firstRetained(); q <= start.lastRetained(); q++) {
            consumers.hand(s, ready(slots.batch(q)));
        }
        log.info("{} joined at {} (epoch {}, sample {}{})", s.describe(), start.mode().label(), start.epoch(),
                start.sample(), start.epoch() > stream.nextEpoch() ? ", waiting for that epoch to start" : "");
        changed.signalAll();
        return s;
    }

    /**
     * A rank of a job said HELLO: refused (an error was sent; null), or a candidate that waits for the rest of its
     * job ({@link #awaitJob}). The rank that completes its job admits all of them here, at one start.
     */
    JobRoster.Candidate joinRank(int id, MessageChannel channel, Message.Hello hello, String user,
                                 Function<StartPoint, Message.Welcome> welcome) {
        lock.lock();
        try {
            JobRoster.Arrival arrival = closedReason != null ? null
                    : roster.arrive(id, channel, hello, user, System.nanoTime());
            switch (arrival) {
                case null -> {
                    channel.sendQuietly(new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, "producer '" + producerName
                            + "' is shutting down (" + closedReason + ")"));
                    channel.close();
                    return null;
                }
                case JobRoster.Arrival.Refused(String why) -> {
                    log.warn("refusing rank {} of job '{}' (pid {}): {}", hello.rank(), hello.job(), hello.pid(), why);
                    channel.sendQuietly(new Message.Error(Message.ErrorCode.BAD_REQUEST, why));
                    channel.close();
                    return null;
                }
                case JobRoster.Arrival.Waiting(JobRoster.Candidate c) -> {
                    log.info("rank {} of job '{}' (pid {}) waits for the rest of its job's {} ranks", hello.rank(),
                            hello.job(), hello.pid(), hello.worldSize());
                    return c;
                }
                case JobRoster.Arrival.Complete(JobRoster.Candidate c, List<JobRoster.Candidate> ranks) -> {
                    startJob(ranks, welcome);
                    return c;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Admits every rank of a job that formed at one start, or refuses them all alike. */
    private void startJob(List<JobRoster.Candidate> ranks, Function<StartPoint, Message.Welcome> welcome) {
        Admission.Verdict verdict = admit(ranks.getFirst().hello);
        if (verdict instanceof Admission.Verdict.Refused(Message.Error refusal)) {
            for (JobRoster.Candidate c : ranks) {
                c.channel.sendQuietly(refusal);
                c.channel.close();
                c.admitted.complete(null);
            }
            roster.forget(ranks.getFirst().hello.job());
            return;
        }
        StartPoint start = throughUpstream(((Admission.Verdict.Admitted) verdict).start(), ranks.size());
        log.info("job '{}' formed: its {} ranks start together", ranks.getFirst().hello.job(), ranks.size());
        List<ConsumerSession> admitted = new ArrayList<>();
        String unreachable = null;
        for (JobRoster.Candidate c : ranks) {
            ConsumerSession s = welcome(c.id, c.channel, c.hello, c.user, start, welcome);
            if (s == null) {
                releaseUpstream(start);
                unreachable = unreachable != null ? unreachable : "rank " + c.hello.rank() + " of job '" + c.hello.job()
                        + "' (pid " + c.hello.pid() + ") went away before its job started; restart all of its ranks";
            } else {
                roster.admitted(c.hello.job(), s);
                admitted.add(s);
            }
            c.admitted.complete(s);
        }
        if (unreachable != null) {
            for (ConsumerSession s : admitted) {
                failRank(s, unreachable);
            }
        }
    }

    /**
     * Waits, on {@code c}'s own connection thread, until its job formed (true: it was admitted, or refused and told)
     * or cannot (false: it went away, its job timed out, the producer closed; it was told where it can be). Sends it
     * a heartbeat every second meanwhile, so that it knows the producer lives and the producer notices it leave.
     */
    ConsumerSession awaitJob(JobRoster.Candidate c) throws InterruptedException {
        while (true) {
            try {
                return c.admitted.get(ProducerServer.HEARTBEAT_NANOS, java.util.concurrent.TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                return null;
            } catch (java.util.concurrent.TimeoutException e) {
                lock.lock();
                try {
                    stillWaiting(c);
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    private void stillWaiting(JobRoster.Candidate c) {
        if (!c.waiting()) {
            return;
        }
        if (closedReason != null) {
            roster.withdraw(c);
            dropCandidate(c, new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, "producer '" + producerName
                    + "' is shutting down (" + closedReason + ")"));
            return;
        }
        JobRoster.Expiry expiry = roster.expire(c, System.nanoTime());
        if (expiry != null) {
            log.warn(expiry.message());
            for (JobRoster.Candidate other : expiry.ranks()) {
                dropCandidate(other, new Message.Error(Message.ErrorCode.JOB_FAILED, expiry.message()));
            }
        } else if (!sent(c.channel, new Message.Heartbeat())) {
            log.info("rank {} of job '{}' (pid {}) went away before its job formed", c.hello.rank(), c.hello.job(),
                    c.hello.pid());
            roster.withdraw(c);
            dropCandidate(c, null);
        }
    }

    private static boolean sent(MessageChannel channel, Message m) {
        try {
            channel.send(m);
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private static void dropCandidate(JobRoster.Candidate c, Message.Error error) {
        if (error != null) {
            c.channel.sendQuietly(error);
        }
        c.channel.close();
        c.admitted.complete(null);
    }

    /** A consumer left: if it was a rank of a running job that died, the job's other ranks fail too. */
    private void left(ConsumerSession s, String why) {
        releaseUpstream(s.start);
        if (closedReason != null) {
            return; // every consumer is being told why already
        }
        JobRoster.Failure f = roster.left(s, why, ConsumerReader.GOODBYE.equals(why));
        for (ConsumerSession other : f.ranks()) {
            failRank(other, f.message());
        }
    }

    private void failRank(ConsumerSession s, String message) {
        log.warn("{} fails with its job: {}", s.describe(), message);
        s.send(new Message.Error(Message.ErrorCode.JOB_FAILED, message));
        consumers.detach(s, "its job failed");
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

    /** Records a consumer's report about itself (for {@link #status}). */
    void progress(ConsumerSession s, Message.Progress p) {
        locked(() -> s.progress(p));
    }

    /** A consistent snapshot of the producer and its consumers, taken under the lock. */
    public ProducerStatus status(long pid, String source) {
        lock.lock();
        try {
            long now = System.nanoTime();
            ProducerStatus.State state;
            if (closedReason != null) {
                state = ProducerStatus.State.CLOSING;
            } else if (streamEnded) {
                state = ProducerStatus.State.DRAINING;
            } else if (consumers.count() < (totalPublished == 0 ? rules.minConsumers() : 1)) {
                state = ProducerStatus.State.WAITING_FOR_CONSUMERS;
            } else {
                state = ProducerStatus.State.SERVING;
            }
            return new ProducerStatus(Math.max(0, pid), producerName, source, state, layout.batch().batchSize(),
                    rules.samplesPerEpoch(), rules.epochs(), stream.nextEpoch(), stream.nextSample(), totalPublished,
                    totalSamples, loaderRate.perSecond(now), slots.count(), layout.slotBytes(),
                    slots.inUse(stream.publishedSeq(), joinRule), rules.rubberBand(),
                    (int) Math.min(rules.rubberBand(), totalPublished), now - startedNanos, consumers.count(),
                    consumers.evictions(), joinRule.midEpoch(), consumers.status(now, stream.nextPosition()));
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
        return locked(() -> totalPublished);
    }

    private <T> T locked(java.util.function.Supplier<T> f) {
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
