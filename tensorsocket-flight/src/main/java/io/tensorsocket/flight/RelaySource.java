package io.tensorsocket.flight;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.spi.RelayedSource;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A remote stream as the source of a local producer, so the jobs on one host share one network stream
 * and read it from shared memory. The relay's consumers get what local consumers of the upstream would:
 * the upstream's epochs, numbered as upstream ({@link #firstEpoch()}), each exact for a consumer that
 * starts at one of its starts. To keep that, the relay joins its upstream at an epoch start: one that
 * connects mid-epoch waits for the upstream's next epoch to begin, and so do its consumers meanwhile.
 *
 * <p>A relay consumer that joins mid-epoch starts exact too where the upstream chooses its order: the relay asks
 * the upstream ({@link UpstreamBoundaries}, the Flight action {@link BoundaryAction}) to keep its join offset as a
 * boundary, as for a consumer of its own; if the upstream drew its next epoch's order already, the joiner starts
 * at that epoch's start, moments later. Boundaries are counted here, so the upstream is asked once per offset.
 *
 * <p>Once its stream has begun, a relay whose consumers all left reads its upstream on for no one until one comes
 * back or its idle timeout ends it: a relay that paused would hold the upstream's other readers.
 *
 * <p>Each received batch is copied once, from the network buffer into an arena slot.
 */
public final class RelaySource implements RelayedSource, UpstreamBoundaries {
    /** How long a join waits for the upstream to say whether it keeps a boundary. */
    static final Duration BOUNDARY_TIMEOUT = Duration.ofSeconds(2);

    private final RemoteConsumer remote;
    /** Relay consumers per offset whose boundary the upstream keeps; under the relay producer's lock. */
    private final Map<Integer, Integer> kept = new HashMap<>();
    /** Sends releases, which the producer does not wait for. */
    private final ExecutorService releases = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "tensorsocket-relay-boundaries");
        t.setDaemon(true);
        return t;
    });
    /** Why the upstream's stream failed, once it has; set on a gRPC thread. */
    private volatile TensorSocketException upstreamFailure;
    /** The producer's thread while it hands a batch to the sink (where it waits for slots and consumers), else null. */
    private Thread handing;

    private RelaySource(RemoteConsumer remote) {
        this.remote = remote;
        // Before its first consumer comes a relay reads nothing (later it reads on for no one: ServingRules'
        // readsWhenIdle), so it would not learn that its upstream went away; the stream's end tells it, and ends the
        // producer's wait for consumers or slots.
        remote.onFailure(this::upstreamFailed);
    }

    private synchronized void upstreamFailed(TensorSocketException e) {
        if (upstreamFailure == null) {
            upstreamFailure = e;
            if (handing != null) {
                handing.interrupt();
            }
        }
    }

    /** Hands {@code b} to the sink; a failing upstream ends a wait there with its own error. */
    private void hand(BatchSink sink, Batch b) {
        synchronized (this) {
            if (upstreamFailure != null) {
                throw relayEnded();
            }
            handing = Thread.currentThread();
        }
        try {
            sink.put(b);
        } catch (RuntimeException e) {
            if (upstreamFailure != null) {
                throw relayEnded();
            }
            throw e;
        } finally {
            synchronized (this) {
                handing = null;
                Thread.interrupted(); // an interrupt meant for the wait above must not hit the next read
            }
        }
    }

    private ProducerGoneException relayEnded() {
        TensorSocketException cause = upstreamFailure;
        return new ProducerGoneException(
                "the relay's upstream " + remote.address() + " failed: " + cause.getMessage(), cause);
    }

    /**
     * Connects to {@code uri} and relays its batches at {@code batchSize} samples each.
     *
     * @param batchTimeout bound on the wait for any one remote batch
     */
    public static RelaySource connect(String uri, int batchSize, RemoteOptions options, Duration batchTimeout) {
        ConsumerOptions opts = ConsumerOptions.batchSize(batchSize)
                .withBatchTimeout(batchTimeout)
                .withStartPolicy(StartPolicy.NEXT_EPOCH_START);
        RemoteConsumer remote = RemoteConsumer.connect(uri, opts, options);
        if (remote.terms().startMode() != StartMode.EPOCH_START
                || remote.terms().startSample() != 0) {
            remote.close();
            throw new ProtocolException("server " + uri + " started the relay's stream at sample "
                    + remote.terms().startSample()
                    + " of epoch " + remote.terms().startEpoch() + " ("
                    + remote.terms().startMode().label() + ") although it asked for"
                    + " the next epoch start; the relay's epochs would not be the upstream's");
        }
        return new RelaySource(remote);
    }

    /** How the relay's remote stream lined up with the remote producer's epochs: always at an epoch start. */
    public StartMode startMode() {
        return remote.terms().startMode();
    }

    /** The upstream epoch the relay joined at, so the relay's epochs carry the upstream's numbers. */
    @Override
    public long firstEpoch() {
        return remote.terms().startEpoch();
    }

    /** The upstream's remaining epochs, or {@code requested} of them if fewer (0: as many as the upstream serves). */
    @Override
    public long epochs(long requested) {
        long upstreamEnd = remote.terms().producerEpochs();
        if (upstreamEnd == 0) {
            return requested;
        }
        long left = Math.max(0, upstreamEnd - remote.terms().startEpoch());
        return requested == 0 ? left : Math.min(requested, left);
    }

    @Override
    public BatchLayout layout() {
        return new BatchLayout(remote.terms().tensors(), remote.terms().batchSize());
    }

    @Override
    public long samplesPerEpoch() {
        return remote.terms().samplesPerEpoch();
    }

    @Override
    public void emitEpoch(long epoch, BatchSink sink) {
        long samples = 0;
        for (Batch b : remote) {
            if (b.epoch() != epoch) {
                throw new ProtocolException("the remote stream " + remote.address() + " sent a batch of its epoch "
                        + b.epoch() + " where the relay serves epoch " + epoch + "; the relay stops rather than serve"
                        + " them under the wrong number");
            }
            hand(sink, b);
            samples += b.size();
        }
        if (samples < remote.terms().samplesPerEpoch()) {
            throw new ProducerGoneException("the remote stream " + remote.address() + " ended after " + samples
                    + " of epoch " + epoch + "'s " + remote.terms().samplesPerEpoch() + " samples"
                    + (remote.isEndOfStream() ? " (its producer served no more epochs)" : ""));
        }
    }

    /** The upstream, where it chooses its order and so can keep this relay's joiners' boundaries; else null. */
    @Override
    public UpstreamBoundaries upstreamBoundaries() {
        return remote.terms().midEpochStart() == StartMode.EXACT
                        && remote.terms().consumerId() >= 0
                ? this
                : null;
    }

    @Override
    public synchronized Answer keep(long epoch, int offset, int n) {
        if (!kept.containsKey(offset)) {
            Answer a = remote.boundary(BoundaryAction.KEEP, epoch, offset, BOUNDARY_TIMEOUT);
            if (a != Answer.KEPT) {
                return a;
            }
        }
        kept.merge(offset, n, Integer::sum);
        return Answer.KEPT;
    }

    @Override
    public synchronized void release(int offset) {
        Integer left = kept.computeIfPresent(offset, (k, c) -> c == 1 ? null : c - 1);
        if (left == null && !releases.isShutdown()) {
            releases.execute(() -> remote.boundary(BoundaryAction.RELEASE, 0, offset, BOUNDARY_TIMEOUT));
        }
    }

    /** The remote producer's description, so consumers of the relay see what the source is. */
    @Override
    public String description() {
        return remote.terms().sourceDescription();
    }

    @Override
    public void close() {
        releases.shutdownNow();
        remote.close();
    }
}
