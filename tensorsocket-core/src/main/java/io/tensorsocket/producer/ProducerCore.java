package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.StartMode;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.protocol.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The producer's bookkeeping: which slot holds which batch, who still reads it, where the stream is, and
 * who is attached. All of it lives here, behind one lock; the arena itself holds only data.
 *
 * <p>Slots are used as a ring: batch {@code seq} goes to slot {@code seq % N}. A slot is reused only
 * when every consumer that was sent its batch has released it and the batch has left the rubber-band
 * window (the {@code R} most recently published batches). With at most {@code L} claims outstanding,
 * {@code N >= R + L} guarantees the slot about to be reused is never inside the window.
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
    private final int claimsAhead;
    private final Duration stallTimeout;
    private final Duration idleTimeout;
    private final int minConsumers;
    private final String producerName;

    private final long[] slotSeq;
    private final int[] slotHolders;
    private final long[] slotEpoch;
    private final long[] slotIndex;
    private final long[] slotSampleStart;
    private final int[] slotSamples;

    private final Map<Integer, ConsumerSession> consumers = new LinkedHashMap<>();
    private final ArrayDeque<Claim> claims = new ArrayDeque<>();

    private long nextSeq;
    private long publishedSeq = -1;
    /** Where the next published batch starts: producer epoch and sample position. */
    private long nextEpoch;
    private long nextSample;
    private long nextIndex;
    /** Seq of the first batch of {@link #nextEpoch}, once published; -1 before. */
    private long epochStartSeq = -1;
    private boolean streamEnded;
    private String closedReason;
    private long totalPublished;
    private long totalSamples;
    private final long startedNanos = System.nanoTime();
    private final RateWindow loaderRate = new RateWindow();

    public ProducerCore(SharedArena arena, long samplesPerEpoch, long epochs, int rubberBand, int claimsAhead,
                 Duration stallTimeout, Duration idleTimeout, int minConsumers, String producerName) {
        this.minConsumers = minConsumers;
        this.arena = arena;
        this.layout = arena.layout();
        this.samplesPerEpoch = samplesPerEpoch;
        this.epochs = epochs;
        this.rubberBand = rubberBand;
        this.claimsAhead = claimsAhead;
        this.stallTimeout = stallTimeout;
        this.idleTimeout = idleTimeout;
        this.producerName = producerName;
        int n = layout.slotCount();
        slotSeq = new long[n];
        java.util.Arrays.fill(slotSeq, -1);
        slotHolders = new int[n];
        slotEpoch = new long[n];
        slotIndex = new long[n];
        slotSampleStart = new long[n];
        slotSamples = new int[n];
    }

    /** The largest consumer batch size that can never deadlock: see {@link #slotsNeeded(int)}. */
    int maxConsumerBatch() {
        long b = (long) (layout.slotCount() - claimsAhead - 1) * layout.batch().batchSize() + 1;
        return (int) Math.min(Integer.MAX_VALUE, b);
    }

    /**
     * Slots a consumer batch of {@code b} samples may span at once: the full batches it touches, plus one
     * for an epoch's short last batch when a rolling epoch crosses the producer's epoch boundary. The
     * slowest consumer can always progress if this is at most {@code N - L + 1}.
     */
    int slotsNeeded(int b) {
        int B = layout.batch().batchSize();
        return (int) Math.min(Integer.MAX_VALUE, (b - 1L + B - 1) / B + 2);
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
            slotSeq[slot] = seq;
            slotSamples[slot] = 0;
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
            if (slotHolders[slot] == 0) {
                return;
            }
            long waited = System.nanoTime() - stalledSince;
            long left = stallTimeout.toNanos() - waited;
            if (left <= 0) {
                evictHoldersOf(slot);
                stalledSince = System.nanoTime();
                continue;
            }
            awaitNanos(left);
        }
    }

    private void awaitConsumers(int needed) {
        long deadline = System.nanoTime() + idleTimeout.toNanos();
        if (totalPublished == 0) {
            log.info("producer '{}' waits for {} consumer(s) before it starts (up to {} s)", producerName, needed,
                    idleTimeout.toSeconds());
        } else {
            log.info("no consumer attached; producer '{}' pauses (up to {} s)", producerName, idleTimeout.toSeconds());
        }
        while (consumers.size() < needed) {
            checkOpen();
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new TensorSocketTimeoutException(consumers.size() + " of the " + needed + " consumer(s) producer '"
                        + producerName + "' waits for attached within " + idleTimeout.toSeconds()
                        + " s; it stops (raise the idle timeout, --idle-timeout-s, to wait longer)");
            }
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
        for (ConsumerSession c : List.copyOf(consumers.values())) {
            if (c.held.contains(slotSeq[slot])) {
                String msg = c.describe() + " held batch " + slotSeq[slot] + " (epoch " + slotEpoch[slot] + ", batch "
                        + slotIndex[slot] + ") for more than " + stallTimeout.toMillis() + " ms while producer '"
                        + producerName + "' waited for its slot; it was disconnected. Release batches sooner (close"
                        + " them or ask for the next), or raise the producer's stall timeout";
                log.warn("evicting {}", msg);
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
            if (samples < 1 || samples > layout.batch().batchSize()) {
                throw new IllegalArgumentException("a batch holds 1 to " + layout.batch().batchSize() + " samples, not " + samples);
            }
            c.samples = samples;
            while (!claims.isEmpty() && claims.peekFirst().samples != 0) {
                publishInOrder(claims.pollFirst());
            }
        } finally {
            lock.unlock();
        }
    }

    private void publishInOrder(Claim c) {
        checkOpen();
        int B = layout.batch().batchSize();
        if (nextSample + c.samples > samplesPerEpoch) {
            throw new IllegalStateException("the source emitted more than the " + samplesPerEpoch
                    + " samples per epoch it declared (epoch " + nextEpoch + ")");
        }
        if (c.samples < B && nextSample + c.samples < samplesPerEpoch) {
            throw new IllegalStateException("batch " + nextIndex + " of epoch " + nextEpoch + " holds " + c.samples
                    + " samples; only an epoch's last batch may hold fewer than the batch size " + B);
        }
        int slot = c.slot;
        slotEpoch[slot] = nextEpoch;
        slotIndex[slot] = nextIndex;
        slotSampleStart[slot] = nextSample;
        slotSamples[slot] = c.samples;
        if (nextSample == 0) {
            epochStartSeq = c.seq;
        }
        Message.BatchReady ready = new Message.BatchReady(c.seq, slot, nextEpoch, nextIndex, nextSample, c.samples);
        for (ConsumerSession s : List.copyOf(consumers.values())) {
            hand(s, ready);
        }
        publishedSeq = c.seq;
        totalPublished++;
        totalSamples += c.samples;
        loaderRate.record(System.nanoTime(), totalSamples);
        nextIndex++;
        nextSample += c.samples;
        changed.signalAll();
    }

    private void hand(ConsumerSession s, Message.BatchReady ready) {
        s.held.addLast(ready.seq());
        slotHolders[ready.slot()]++;
        s.batchesSent++;
        if (!s.send(ready)) {
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
            if (nextSample != samplesPerEpoch) {
                throw new IllegalStateException("the source declared " + samplesPerEpoch + " samples per epoch but epoch "
                        + epoch + " yielded " + nextSample);
            }
            Message.EpochEnd end = new Message.EpochEnd(epoch, nextIndex, nextSample);
            for (ConsumerSession s : List.copyOf(consumers.values())) {
                s.send(end);
            }
            nextEpoch = epoch + 1;
            nextSample = 0;
            nextIndex = 0;
            epochStartSeq = -1;
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
                s.send(new Message.EndOfStream(epochsRun));
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

    /** Outcome of a join: the welcome to send and the retained batches that follow it. */
    record Join(ConsumerSession session, Message.Welcome welcome, List<Message.BatchReady> retained) {
    }

    /**
     * Registers a consumer and decides where it starts. The welcome and the retained batches are sent here,
     * under the lock, so no batch published meanwhile can slip in before them.
     *
     * @return null if the consumer was refused (an error was sent)
     */
    ConsumerSession join(int id, io.tensorsocket.protocol.MessageChannel channel, Message.Hello hello, String user,
                         java.util.function.Function<StartPoint, Message.Welcome> welcome) {
        lock.lock();
        try {
            if (epochs > 0 && nextEpoch >= epochs) {
                streamEnded = true;
            }
            if (closedReason != null || streamEnded) {
                String why = streamEnded ? "producer '" + producerName + "' has finished its " + epochs + " epochs"
                        : "producer '" + producerName + "' is shutting down (" + closedReason + ")";
                sendAndClose(channel, new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, why));
                return null;
            }
            ConsumerSession s = new ConsumerSession(id, channel, hello);
            s.user = user;
            StartPoint start;
            List<Long> retained = new ArrayList<>();
            if (nextSample == 0) {
                start = new StartPoint(StartMode.EPOCH_START, nextEpoch, 0);
            } else if (epochStartSeq >= 0 && epochStartSeq > publishedSeq - rubberBand) {
                start = new StartPoint(StartMode.EPOCH_START, nextEpoch, 0);
                for (long q = epochStartSeq; q <= publishedSeq; q++) {
                    retained.add(q);
                }
            } else {
                start = new StartPoint(StartMode.ROLLING, nextEpoch, nextSample);
            }
            s.position = start.epoch() * samplesPerEpoch + start.sample();
            s.startMode = start.mode();
            if (!s.send(welcome.apply(start))) {
                channel.close();
                return null;
            }
            consumers.put(id, s);
            for (long q : retained) {
                int slot = (int) (q % layout.slotCount());
                hand(s, new Message.BatchReady(q, slot, slotEpoch[slot], slotIndex[slot], slotSampleStart[slot],
                        slotSamples[slot]));
            }
            log.info("{} joined at {} (epoch {}, sample {})", s.describe(), start.mode().label(), start.epoch(), start.sample());
            changed.signalAll();
            return s;
        } finally {
            lock.unlock();
        }
    }

    /** Where a consumer starts. */
    public record StartPoint(StartMode mode, long epoch, long sample) {
    }

    /**
     * Records that {@code s} released {@code seq}.
     *
     * @return false if {@code s} did not hold that batch (a protocol violation)
     */
    boolean release(ConsumerSession s, long seq) {
        lock.lock();
        try {
            if (!s.attached) {
                return true; // a release racing with eviction: nothing left to do
            }
            if (!s.held.remove(seq)) {
                return false;
            }
            s.releases++;
            int slot = (int) (seq % layout.slotCount());
            slotHolders[slot]--;
            s.position = Math.max(s.position, slotEpoch[slot] * samplesPerEpoch + slotSampleStart[slot] + slotSamples[slot]);
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Records a consumer's report about itself (for {@link #status}). */
    void progress(ConsumerSession s, Message.Progress p) {
        lock.lock();
        try {
            if (s.progress != null) {
                s.previousProgress = s.progress;
                s.previousProgressNanos = s.progressNanos;
            }
            s.progress = p;
            s.progressNanos = System.nanoTime();
        } finally {
            lock.unlock();
        }
    }

    /** A consistent snapshot of the producer and its consumers, taken under the lock. */
    ProducerStatus status(long pid, String source) {
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
            int n = layout.slotCount();
            int inUse = 0;
            for (int slot = 0; slot < n; slot++) {
                long q = slotSeq[slot];
                if (q >= 0 && (slotHolders[slot] > 0 || q > publishedSeq || q > publishedSeq - rubberBand)) {
                    inUse++;
                }
            }
            int window = (int) Math.min(rubberBand, totalPublished);
            long producerPosition = nextEpoch * samplesPerEpoch + nextSample;
            List<ProducerStatus.Consumer> list = new ArrayList<>();
            for (ConsumerSession c : consumers.values()) {
                if (list.size() == ProducerStatus.MAX_LISTED) {
                    break;
                }
                Message.Progress p = c.progress;
                long epoch = p != null ? p.epoch() : samplesPerEpoch == 0 ? 0 : c.position / samplesPerEpoch;
                double rate = 0;
                if (p != null) {
                    long fromNanos = c.previousProgress != null ? c.previousProgressNanos : c.joinedNanos;
                    long fromSamples = c.previousProgress != null ? c.previousProgress.samples() : 0;
                    long toNanos = now - c.progressNanos > 2_000_000_000L ? now : c.progressNanos;
                    rate = toNanos > fromNanos ? (p.samples() - fromSamples) / ((toNanos - fromNanos) / 1e9) : 0;
                }
                list.add(new ProducerStatus.Consumer(c.id, Math.max(0, c.hello.pid()), c.user, c.hello.batchSize(),
                        c.hello.dropLast(), c.startMode, epoch, c.position,
                        Math.max(0, producerPosition - c.position), c.held.size(), c.batchesSent, p != null,
                        p != null ? p.samples() : 0, Math.max(0, rate), p != null ? p.waitNanos() : 0,
                        p != null ? p.workNanos() : 0, now - c.joinedNanos));
            }
            return new ProducerStatus(Math.max(0, pid), producerName, source, state, layout.batch().batchSize(),
                    samplesPerEpoch, epochs, nextEpoch, nextSample, totalPublished, totalSamples,
                    loaderRate.perSecond(now), n, layout.slotBytes(), inUse, rubberBand, window, now - startedNanos,
                    consumers.size(), list);
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
            slotHolders[(int) (seq % layout.slotCount())]--;
        }
        s.held.clear();
        s.channel.close();
        log.info("{} left ({}); released {} batches; {} consumers remain", s.describe(), why, n, consumers.size());
        changed.signalAll();
    }

    private static void sendAndClose(io.tensorsocket.protocol.MessageChannel ch, Message m) {
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
        public void publish(int samples) {
            ProducerCore.this.publish(this, samples);
        }
    }

    /** Samples per second over roughly the last few seconds, from cumulative counts sampled as they change. */
    private static final class RateWindow {
        private static final int POINTS = 32;
        private static final long SPACING = 100_000_000L;
        private final long[] at = new long[POINTS];
        private final long[] count = new long[POINTS];
        private int size;
        private int head;

        void record(long nanos, long cumulative) {
            int last = (head + size - 1) % POINTS;
            if (size > 1 && nanos - at[(head + size - 2) % POINTS] < SPACING) {
                at[last] = nanos; // too close to the one before: move the newest point instead of adding one
                count[last] = cumulative;
                return;
            }
            if (size == POINTS) {
                head = (head + 1) % POINTS;
                size--;
            }
            int i = (head + size) % POINTS;
            at[i] = nanos;
            count[i] = cumulative;
            size++;
        }

        double perSecond(long now) {
            if (size < 2) {
                return 0;
            }
            long lastAt = at[(head + size - 1) % POINTS];
            long dt = Math.max(now, lastAt) - at[head];
            long dc = count[(head + size - 1) % POINTS] - count[head];
            return dt > 0 ? dc / (dt / 1e9) : 0;
        }
    }

    static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }
}
