package io.tensorsocket.producer;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.StartPoint;
import io.tensorsocket.stream.StreamGeometry;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producer's view of one attached consumer: its connection, what it asked for and which batches it
 * still holds. Mutated only under the producer's lock, but for the count of unanswered heartbeats.
 */
final class ConsumerSession {
    private static final Logger log = LoggerFactory.getLogger(ConsumerSession.class);
    final int id;
    final MessageChannel channel;
    final Message.Hello hello;
    /** Sequence numbers sent and not yet released, oldest first (releases arrive in order). */
    final ArrayDeque<Long> held = new ArrayDeque<>();

    final long joinedNanos = System.nanoTime();
    long batchesSent;
    /**
     * Heartbeats sent to a consumer that has not answered them: a consumer that stops reading (stopped, or
     * stuck) gets no more than this many, so they can never fill its socket and block the producer.
     */
    static final int MAX_UNANSWERED_HEARTBEATS = 4;

    private final AtomicInteger unansweredHeartbeats = new AtomicInteger(); // counted down by the reader, lock-free

    /** Whether it may be sent one more HEARTBEAT, counting it as sent if so. Under the producer's lock. */
    boolean heartbeatSendable() {
        if (unansweredHeartbeats.get() >= MAX_UNANSWERED_HEARTBEATS) {
            return false;
        }
        unansweredHeartbeats.incrementAndGet();
        return true;
    }

    void heartbeatAnswered() {
        unansweredHeartbeats.updateAndGet(n -> Math.max(0, n - 1));
    }
    /** When anything was last sent to it ({@link System#nanoTime()}): heartbeats fill only silences. */
    volatile long lastSentNanos = System.nanoTime();
    /** Where it started; it is sent batches from there on (later than the producer for one that waits for the next epoch). */
    StartPoint start;

    /**
     * The stream position its stream ends at: the end of the last epoch a finite stream owes it ({@link Tails}), set once
     * the stream's epochs were published; no batch from there on is sent to it.
     */
    long until = Long.MAX_VALUE;

    /**
     * The rest of its epoch it resumes ({@link ResumePlan}), served by a lane of its own; null for one that reads the
     * streams. A resuming consumer is sent nothing of the main stream.
     */
    ResumePlan resuming;

    boolean attached = true;
    /** When a send to it failed ({@link System#nanoTime()}), 0 while none has: see {@code Attached.unreachable}. */
    long unreachableSince;
    /** The peer's user name (SO_PEERCRED), or "?" where the platform does not say. */
    String user = "?";

    StartMode startMode = StartMode.EPOCH_START;
    /** Stream position up to which this consumer has released every sample. */
    long position;
    /** Boundaries kept for the consumers of a relay this consumer feeds ({@code Attached.keepForRelay}), one per joiner. */
    final List<Integer> keptForRelay = new ArrayList<>();
    /** Its latest progress reports, oldest first, at most {@link #RATE_REPORTS}: its rate in status is taken over them. */
    private final ArrayDeque<Message.Progress> reports = new ArrayDeque<>();
    /**
     * Reports a consumer's samples/s in status spans: it reports about once a second, so about five seconds of its
     * own time, long enough to even out batches that come in bursts, short enough to follow a change of pace.
     */
    static final int RATE_REPORTS = 6;

    /** The whole epochs it had read when it left, or -1 if it left inside one ({@link #epochsReadWhole}). */
    long leftAfterEpochs = -1;

    /** The lane that serves it since it fell behind ({@link Lanes}), or null while it reads the main stream. */
    Lane lane;

    /** Where its lane's batches become its own (the position its MOVED said), or -1 while its move waits. */
    long laneFrom = -1;

    /**
     * The last epoch whose EPOCH_END it was sent (the main stream's or a lane's), or -1: a move at an epoch's start
     * must not leave it without the end of the epoch before, nor send it twice ({@link LaneSteps}).
     */
    long lastEpochEnd = -1;

    /** When its MOVE was sent (System.nanoTime), for the deadline of its answer. */
    long moveSentAt;

    /** The lanes that served it (the current one too), while it may still hold batches of theirs. */
    final List<Lane> lanes = new ArrayList<>(1);

    /** The lane whose batch {@code seq} is, or null for a batch of the main stream. */
    Lane laneOf(long seq) {
        for (Lane l : lanes) {
            if (l.owns(seq)) {
                return l;
            }
        }
        return null;
    }

    /** Where its stream events go: its socket, or its descriptor ring (see {@link RingPool#give}). */
    Outlet events;

    ConsumerSession(int id, MessageChannel channel, Message.Hello hello) {
        this.id = id;
        this.channel = channel;
        this.hello = hello;
        this.events = new Outlet.Socket(channel);
    }

    /** Sends a stream event (a batch, an epoch's end, the end), reporting failure instead of throwing. */
    boolean sendEvent(Message m) {
        if (m instanceof Message.EpochEnd e) {
            lastEpochEnd = Math.max(lastEpochEnd, e.epoch());
        }
        if (!events.send(m)) {
            if (events instanceof Outlet.Ring r) {
                log.warn(
                        "{} has not read any of the {} entries of its full descriptor ring; dropping it",
                        describe(),
                        r.writer().capacity());
            }
            return false;
        }
        lastSentNanos = System.nanoTime();
        return true;
    }

    /**
     * The whole epochs of its own it has read: those it released every batch of, counted from where it started (an
     * exact or rolling joiner's epochs end where it joined), or -1 if it stands inside one.
     */
    long epochsReadWhole(StreamGeometry geometry) {
        long read = position - geometry.position(start.epoch(), start.sample());
        return read > 0 && read % geometry.samplesPerEpoch() == 0 ? read / geometry.samplesPerEpoch() : -1;
    }

    /** Sends over the socket, reporting failure instead of throwing: a broken connection is dealt with by its reader. */
    boolean send(Message m) {
        try {
            channel.send(m);
            lastSentNanos = System.nanoTime();
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Records a report the consumer sent about itself. */
    void progress(Message.Progress p) {
        if (reports.size() == RATE_REPORTS) {
            reports.removeFirst();
        }
        reports.addLast(p);
    }

    /**
     * Samples per second as the consumer itself counts them: samples handed out over its own time (waiting for
     * data plus working between batches) across its latest reports, or since it connected while it has sent one.
     * The consumer's clock, not the arrival times of its reports, so the figure agrees with what the training
     * job measures, however its reports are spaced.
     */
    private double rate() {
        return samplesPerSecondOf(p -> p.waitNanos() + p.workNanos());
    }

    /** Samples handed out across its latest reports (or since it connected) over the time {@code time} counts. */
    private double samplesPerSecondOf(ToLongFunction<Message.Progress> time) {
        Message.Progress last = reports.peekLast();
        if (last == null) {
            return 0;
        }
        Message.Progress first = reports.size() > 1 ? reports.peekFirst() : null;
        long samples = last.samples() - (first != null ? first.samples() : 0);
        long nanos = time.applyAsLong(last) - (first != null ? time.applyAsLong(first) : 0);
        return nanos > 0 ? Math.max(0, samples / (nanos / 1e9)) : 0;
    }

    /**
     * Samples per second its own work between batches allows (samples over the time it spent outside waiting for data,
     * across its latest reports), or 0 where it has not said (fewer than two reports): how fast it would read were it never kept waiting.
     */
    double ownPace() {
        return reports.size() < 2 ? 0 : samplesPerSecondOf(Message.Progress::workNanos);
    }

    /**
     * How long a consumer may read before its pace is known ({@link #ownPace}): it reports at its first batch and then
     * about once a second, and a pace takes two reports. Before that nothing says whether it is slow or just behind.
     */
    static final long PACE_UNKNOWN_NANOS = 1_500_000_000L;

    /** Whether its pace is not known yet at {@code now} and it is too young to be judged without it. */
    boolean paceUnknownYet(long now) {
        return ownPace() <= 0 && now - joinedNanos < PACE_UNKNOWN_NANOS;
    }

    /** This consumer's line in the producer's status at {@code now}, the producer being at {@code producerPosition}. */
    ProducerStatus.Consumer status(long now, long producerPosition, StreamGeometry geometry, double paceShare) {
        Message.Progress p = reports.peekLast();
        long epoch = p != null ? p.epoch() : geometry.epochOf(position);
        return new ProducerStatus.Consumer(
                id,
                Math.max(0, hello.pid()),
                user,
                hello.batchSize(),
                hello.dropLast(),
                startMode,
                epoch,
                position,
                Math.max(0, producerPosition - position),
                held.size(),
                batchesSent,
                p != null,
                p != null ? p.samples() : 0,
                rate(),
                p != null ? p.waitNanos() : 0,
                p != null ? p.workNanos() : 0,
                now - joinedNanos,
                hello.client(),
                events instanceof Outlet.Ring,
                hello.job(),
                hello.rank(),
                hello.worldSize(),
                paceShare,
                lane != null ? lane.number : 0,
                lane != null ? lane.samplesLoaded : 0,
                until == Long.MAX_VALUE ? -1 : until,
                resuming != null);
    }

    /**
     * How logs and errors name this consumer: by its process, or, for a remote one that a Flight server's stream
     * stands in for, by its peer (the stream's pid is the server's own).
     */
    String describe() {
        String client = hello.client();
        if (client != null && client.startsWith(ConsumerOptions.REMOTE_CLIENT_PREFIX)) {
            return "remote consumer " + id + " (" + client + ", batch size " + hello.batchSize() + ")";
        }
        return "consumer " + id + " (pid " + hello.pid() + ", batch size " + hello.batchSize()
                + (hello.inJob()
                        ? ", rank " + hello.rank() + " of " + hello.worldSize() + " of job '" + hello.job() + "'"
                        : "")
                + ")";
    }
}
