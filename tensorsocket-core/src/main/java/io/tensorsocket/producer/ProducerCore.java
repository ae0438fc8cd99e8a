package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.DescriptorRings;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.BatchPosition;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * The producer's bookkeeping: which slot holds which batch, who still reads it, where the stream is, and
 * who is attached. All of it lives here, behind one lock; the arena itself holds only data.
 *
 * <p>Slots are used as a ring: batch {@code seq} goes to slot {@code seq % N}. A slot is reused only
 * when every consumer that was sent its batch has released it and the batch has left the rubber-band
 * window (the {@code R} most recently published batches). With at most {@code L} claims outstanding,
 * {@code N >= R + L} guarantees the slot about to be reused is never inside the window. Positions in the
 * stream and the join rule are the stream model's ({@link ProducerStream}, {@link JoinRule}); this class
 * adds the slots, the consumers and the waiting.
 *
 * <p>A consumer that asked for a descriptor ring (and got one of {@link DescriptorRings}'s) is handed its
 * batches, epoch ends and end there: an entry in shared memory and, only if it sleeps, a futex wake.
 * Everything else, and the whole stream of a consumer without a ring, goes over its socket.
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
    private final long samplesPerEpoch;
    private final long epochs;
    private final int rubberBand;
    private final StreamGeometry geometry;
    private final ProducerStream stream;
    private final JoinRule joinRule;
    private final int claimsAhead;
    private final Duration stallTimeout;
    /** How long to wait with no consumer attached before stopping; null waits until closed. */
    private final Duration idleTimeout;
    private final int minConsumers;
    private final Duration startGrace;
    private final String producerName;

    /** The arena's slots: batch {@code seq} lives in {@code slots[seq % N]}. */
    private final Slot[] slots;

    private final Map<Integer, ConsumerSession> consumers = new LinkedHashMap<>();
    private final ArrayDeque<Claim> claims = new ArrayDeque<>();

    private volatile boolean awaitingRelease;
    private volatile Runnable releaseWanted = () -> { };
    private long nextSeq;
    private boolean streamEnded;
    private String closedReason;
    private long totalPublished;
    private long totalSamples;
    private long evictions;
    /** When the first consumer attached ({@link System#nanoTime()}), 0 before: the start grace counts from it. */
    private long firstAttachNanos;
    private final long startedNanos = System.nanoTime();
    private final RateWindow loaderRate = new RateWindow();
    private RingPool rings = new RingPool(null);

    public ProducerCore(SharedArena arena, long samplesPerEpoch, long epochs, int rubberBand, int claimsAhead,
                 Duration stallTimeout, Duration idleTimeout, int minConsumers, Duration startGrace, String producerName) {
        this(arena, samplesPerEpoch, 0, epochs, rubberBand, claimsAhead, stallTimeout, idleTimeout, minConsumers, startGrace,
                producerName);
    }

    /**
     * @param firstEpoch the number of the first epoch the source emits (a relay's: its upstream's)
     * @param epochs     the epoch the stream ends before, or 0 for no end
     */
    public ProducerCore(SharedArena arena, long samplesPerEpoch, long firstEpoch, long epochs, int rubberBand,
                        int claimsAhead, Duration stallTimeout, Duration idleTimeout, int minConsumers, Duration startGrace,
                        String producerName) {
        this.minConsumers = minConsumers;
        this.startGrace = startGrace;
        this.arena = arena;
        this.layout = arena.layout();
        this.samplesPerEpoch = samplesPerEpoch;
        this.epochs = epochs;
        this.rubberBand = rubberBand;
        this.claimsAhead = claimsAhead;
        this.stallTimeout = stallTimeout;
        this.idleTimeout = idleTimeout;
        this.producerName = producerName;
        this.geometry = new StreamGeometry(samplesPerEpoch, layout.batch().batchSize());
        this.stream = new ProducerStream(geometry, firstEpoch);
        this.joinRule = new JoinRule(rubberBand);
        slots = new Slot[layout.slotCount()];
        for (int i = 0; i < slots.length; i++) {
            slots[i] = new Slot();
        }
    }

    /** Hands stream events to consumers that ask for it through {@code rings}. Call before serving. */
    public void handOffThrough(DescriptorRings rings) {
        lock.lock();
        try {
            this.rings = new RingPool(rings);
        } finally {
            lock.unlock();
        }
    }

    /** One arena slot's state: the batch it holds (seq -1 before its first claim) and how many consumers hold it. */
    private static final class Slot {
        long seq = -1;
        /** Where its batch lies; null while claimed and not yet published. */
        BatchPosition batch;
        int holders;
    }

    private Slot slotOf(long seq) {
        return slots[(int) (seq % slots.length)];
    }

    /** The largest consumer batch size that can never deadlock: see {@link StreamGeometry#slotsNeeded(int)}. */
    int maxConsumerBatch() {
        return geometry.maxConsumerBatch(slots.length, claimsAhead);
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
        Claim c = (Claim) claim();
        for (int t = 0; t < bl.tensors().size(); t++) {
            Tensor src = batch.tensor(bl.tensors().get(t).name());
            MemorySegment.copy(src.data(), 0, c.tensor(t), 0, src.byteSize());
        }
        c.publish(batch.size());
    }

    @Override
    public SlotWriter claim() {
        lock.lock();
        try {
            checkOpen();
            if (claims.size() >= claimsAhead) {
                throw new IllegalStateException("the source holds " + claims.size()
                        + " unpublished claims; publish one first or raise the producer's claimsAhead");
            }
            long seq = nextSeq;
            int slot = (int) (seq % layout.slotCount());
            awaitFreeSlot(slot);
            nextSeq++;
            slots[slot].seq = seq;
            slots[slot].batch = null;
            Claim c = new Claim(seq, slot);
            claims.addLast(c);
            return c;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int claimsAhead() {
        return claimsAhead;
    }

    /** Waits until {@code slot} is free and a consumer is attached, evicting whoever stalls it too long. */
    private void awaitFreeSlot(int slot) {
        long stalledSince = System.nanoTime();
        while (true) {
            checkOpen();
            int needed = totalPublished == 0 && claims.isEmpty() ? minConsumers : 1;
            if (consumers.size() < needed) {
                awaitConsumers(needed);
                stalledSince = System.nanoTime();
                continue;
            }
            if (slots[slot].holders == 0) {
                awaitingRelease = false;
                return;
            }
            long waited = System.nanoTime() - stalledSince;
            long left = stallTimeout.toNanos() - waited;
            if (left <= 0) {
                evictHoldersOf(slot);
                stalledSince = System.nanoTime();
                continue;
            }
            awaitingRelease = true;
            releaseWanted.run();
            awaitNanos(left);
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

    private void awaitConsumers(int needed) {
        long deadline = idleTimeout == null ? Long.MAX_VALUE : System.nanoTime() + idleTimeout.toNanos();
        String bound = idleTimeout == null ? "until stopped" : "up to " + idleTimeout.toSeconds() + " s";
        if (totalPublished == 0) {
            log.info("producer '{}' waits for {} consumer(s) before it starts ({})", producerName, needed, bound);
        } else {
            log.info("no consumer attached; producer '{}' pauses ({})", producerName, bound);
        }
        while (consumers.size() < needed) {
            checkOpen();
            long left = idleTimeout == null ? Long.MAX_VALUE : deadline - System.nanoTime();
            if (left <= 0) {
                throw new TensorSocketTimeoutException(idleMessage(needed));
            }
            awaitNanos(Math.min(left, 60_000_000_000L));
        }
    }

    private String idleMessage(int needed) {
        long ms = idleTimeout.toMillis();
        String within = " within " + (ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms")
                + " (the idle timeout, --idle-timeout-s); raise it to wait longer";
        if (needed <= 1) {
            return "producer '" + producerName + "' stopped: no consumer attached" + within;
        }
        return "producer '" + producerName + "' stopped: only " + consumers.size() + " of the " + needed
                + " consumers it waits for (--min-consumers) attached" + within;
    }

    /**
     * Before the very first batch: waits until the start grace has passed since the first consumer attached,
     * so consumers launched together (a sweep) all start at the first epoch's start.
     */
    private void awaitStartGrace() {
        if (startGrace.isZero() || firstAttachNanos == 0) {
            return;
        }
        long deadline = firstAttachNanos + startGrace.toNanos();
        for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
            checkOpen();
            awaitNanos(left);
        }
    }

    private void awaitNanos(long nanos) {
        try {
            changed.awaitNanos(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Stopped("interrupted");
        }
    }

    private void evictHoldersOf(int slot) {
        Slot s = slots[slot];
        for (ConsumerSession c : List.copyOf(consumers.values())) {
            if (c.held.contains(s.seq)) {
                String msg = c.describe() + " held batch " + s.seq + " (epoch " + s.batch.epoch() + ", batch "
                        + s.batch.index() + ") for more than " + stallTimeout.toMillis() + " ms while producer '"
                        + producerName + "' waited for its slot; it was disconnected. Release batches sooner (close"
                        + " them or ask for the next), or raise the producer's stall timeout";
                log.warn("evicting {}", msg);
                evictions++;
                c.send(new Message.Error(Message.ErrorCode.EVICTED, msg));
                detach(c, "evicted");
            }
        }
    }

    private void publish(Claim c, int samples) {
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
                awaitStartGrace();
            }
            while (!claims.isEmpty() && claims.peekFirst().samples != 0) {
                publishInOrder(claims.pollFirst());
            }
        } finally {
            lock.unlock();
        }
    }

    private void publishInOrder(Claim c) {
        checkOpen();
        BatchPosition p = stream.publish(c.seq, c.samples);
        slots[c.slot].batch = p;
        Message.BatchReady ready = ready(p);
        for (ConsumerSession s : List.copyOf(consumers.values())) {
            if (s.start.sends(p, geometry)) {
                hand(s, ready);
            }
        }
        totalPublished++;
        totalSamples += c.samples;
        loaderRate.record(System.nanoTime(), totalSamples);
        changed.signalAll();
    }

    private Message.BatchReady ready(BatchPosition p) {
        return new Message.BatchReady(p.seq(), (int) (p.seq() % slots.length), p.epoch(), p.index(), p.sampleStart(),
                p.samples());
    }

    private void hand(ConsumerSession s, Message.BatchReady ready) {
        s.held.addLast(ready.seq());
        slots[ready.slot()].holders++;
        s.batchesSent++;
        if (!s.sendEvent(ready)) {
            detach(s, "connection lost");
        }
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
            for (ConsumerSession s : List.copyOf(consumers.values())) {
                s.sendEvent(end);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Marks the stream complete and tells every consumer. */
    public void endStream(long epochsRun) {
        lock.lock();
        try {
            streamEnded = true;
            for (ConsumerSession s : List.copyOf(consumers.values())) {
                s.sendEvent(new Message.EndOfStream(epochsRun));
            }
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
            while (!consumers.isEmpty() && closedReason == null) {
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
            for (ConsumerSession s : List.copyOf(consumers.values())) {
                if (error != null) {
                    s.send(error);
                }
                detach(s, reason);
            }
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
            if (epochs > 0 && stream.nextEpoch() >= epochs) {
                streamEnded = true;
            }
            if (closedReason != null || streamEnded) {
                String why = streamEnded ? "producer '" + producerName + "' has finished its " + epochs + " epochs"
                        : "producer '" + producerName + "' is shutting down (" + closedReason + ")";
                sendAndClose(channel, new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, why));
                return null;
            }
            StartPoint start = joinRule.decide(stream, hello.startPolicy());
            if (epochs > 0 && start.epoch() >= epochs) {
                sendAndClose(channel, new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, "producer '" + producerName
                        + "' is in its last epoch (" + (epochs - 1) + " of 0.." + (epochs - 1) + "), so no epoch starts"
                        + " again for a consumer that waits for the next epoch start; connect without waiting for it"
                        + " (it then starts rolling), or restart the producer with more epochs"));
                return null;
            }
            ConsumerSession s = new ConsumerSession(id, channel, hello);
            s.user = user;
            s.position = geometry.position(start.epoch(), start.sample());
            s.start = start;
            s.startMode = start.mode();
            rings.give(s);
            if (!s.send(welcome.apply(start).forConsumer(id, s.ringIndex))) {
                rings.takeBack(s);
                channel.close();
                return null;
            }
            consumers.put(id, s);
            if (firstAttachNanos == 0) {
                firstAttachNanos = System.nanoTime();
            }
            for (long q = start.firstRetained(); q <= start.lastRetained(); q++) {
                hand(s, ready(slotOf(q).batch));
            }
            log.info("{} joined at {} (epoch {}, sample {}{})", s.describe(), start.mode().label(), start.epoch(),
                    start.sample(), start.epoch() > stream.nextEpoch() ? ", waiting for that epoch to start" : "");
            changed.signalAll();
            return s;
        } finally {
            lock.unlock();
        }
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
            boolean freed = false;
            for (int i = 0; i < n; i++) {
                if (!s.held.remove(seqs[i])) {
                    return seqs[i];
                }
                Slot slot = slotOf(seqs[i]);
                freed |= --slot.holders == 0;
                s.position = Math.max(s.position, slot.batch.end(geometry));
            }
            if (freed) {
                changed.signalAll(); // only a free slot is worth waking the producer for, not each of K releases
            }
            return -1;
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
        lock.lock();
        try {
            long now = System.nanoTime();
            for (ConsumerSession s : List.copyOf(consumers.values())) {
                if (now - s.lastSentNanos >= idleNanos && s.heartbeatSendable()) {
                    if (!s.send(new Message.Heartbeat())) {
                        detach(s, "connection lost");
                    }
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Records a consumer's report about itself (for {@link #status}). */
    void progress(ConsumerSession s, Message.Progress p) {
        lock.lock();
        try {
            s.progress(p);
        } finally {
            lock.unlock();
        }
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
            } else if (consumers.size() < (totalPublished == 0 ? minConsumers : 1)) {
                state = ProducerStatus.State.WAITING_FOR_CONSUMERS;
            } else {
                state = ProducerStatus.State.SERVING;
            }
            int n = slots.length;
            int inUse = 0;
            long publishedSeq = stream.publishedSeq();
            for (Slot slot : slots) {
                if (slot.seq >= 0 && (slot.holders > 0 || slot.seq > publishedSeq || joinRule.inWindow(slot.seq, publishedSeq))) {
                    inUse++;
                }
            }
            int window = (int) Math.min(rubberBand, totalPublished);
            long producerPosition = stream.nextPosition();
            List<ProducerStatus.Consumer> list = new ArrayList<>();
            for (ConsumerSession c : consumers.values()) {
                if (list.size() == ProducerStatus.MAX_LISTED) {
                    break;
                }
                list.add(c.status(now, producerPosition, geometry));
            }
            return new ProducerStatus(Math.max(0, pid), producerName, source, state, layout.batch().batchSize(),
                    samplesPerEpoch, epochs, stream.nextEpoch(), stream.nextSample(), totalPublished, totalSamples,
                    loaderRate.perSecond(now), n, layout.slotBytes(), inUse, rubberBand, window, now - startedNanos,
                    consumers.size(), evictions, list);
        } finally {
            lock.unlock();
        }
    }

    /** Removes a consumer and releases everything it held. Idempotent. */
    void leave(ConsumerSession s, String why) {
        lock.lock();
        try {
            detach(s, why);
        } finally {
            lock.unlock();
        }
    }

    private void detach(ConsumerSession s, String why) {
        if (!s.attached) {
            return;
        }
        s.attached = false;
        consumers.remove(s.id);
        int n = s.held.size();
        for (long seq : s.held) {
            slotOf(seq).holders--;
        }
        s.held.clear();
        s.channel.close();
        rings.takeBack(s);
        log.info("{} left ({}); released {} batches; {} consumers remain", s.describe(), why, n, consumers.size());
        changed.signalAll();
    }

    private static void sendAndClose(MessageChannel ch, Message m) {
        ch.sendQuietly(m);
        ch.close();
    }

    public int consumerCount() {
        lock.lock();
        try {
            return consumers.size();
        } finally {
            lock.unlock();
        }
    }

    public long batchesPublished() {
        lock.lock();
        try {
            return totalPublished;
        } finally {
            lock.unlock();
        }
    }

    /** A claimed slot; filled by the source, published in claim order. */
    private final class Claim implements SlotWriter {
        final long seq;
        final int slot;
        volatile int samples;
        private final MemorySegment slotMemory;

        Claim(long seq, int slot) {
            this.seq = seq;
            this.slot = slot;
            this.slotMemory = arena.slot(slot);
        }

        @Override
        public int capacity() {
            return layout.batch().batchSize();
        }

        @Override
        public MemorySegment tensor(int index) {
            return slotMemory.asSlice(layout.regionOffset(index), layout.regionBytes(index));
        }

        @Override
        public MemorySegment tensor(String name) {
            int i = layout.batch().indexOf(name);
            if (i < 0) {
                throw new IllegalArgumentException("no tensor '" + name + "' in the source's layout " + layout.batch().tensors());
            }
            return tensor(i);
        }

        @Override
        public long arenaOffset() {
            return layout.slotOffset(slot);
        }

        @Override
        public void publish(int samples) {
            ProducerCore.this.publish(this, samples);
        }
    }
}
