package io.tensorsocket.flight;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerGoneException;
import java.time.Duration;

/**
 * A remote stream as the source of a local producer, so the jobs on one host share one network stream
 * and read it from shared memory. Each received batch is copied once, from the network buffer into an
 * arena slot. Epoch {@code e} of the local producer is the remote consumer's {@code e}-th epoch; the
 * local consumers' epochs are exact when the relay starts at a remote epoch start (see
 * {@link #startMode()}).
 */
public final class RelaySource implements BatchSource {
    private final RemoteConsumer remote;

    private RelaySource(RemoteConsumer remote) {
        this.remote = remote;
    }

    /**
     * Connects to {@code uri} and relays its batches at {@code batchSize} samples each.
     *
     * @param batchTimeout bound on the wait for any one remote batch
     */
    public static RelaySource connect(String uri, int batchSize, RemoteOptions options, Duration batchTimeout) {
        ConsumerOptions opts = ConsumerOptions.batchSize(batchSize).withBatchTimeout(batchTimeout);
        return new RelaySource(RemoteConsumer.connect(uri, opts, options));
    }

    /** How the relay's remote stream lined up with the remote producer's epochs. */
    public io.tensorsocket.StartMode startMode() {
        return remote.startMode();
    }

    @Override
    public BatchLayout layout() {
        return new BatchLayout(remote.tensors(), remote.batchSize());
    }

    @Override
    public long samplesPerEpoch() {
        return remote.samplesPerEpoch();
    }

    @Override
    public void emitEpoch(long epoch, BatchSink sink) {
        long samples = 0;
        for (Batch b : remote) {
            sink.put(b);
            samples += b.size();
        }
        if (samples < remote.samplesPerEpoch()) {
            throw new ProducerGoneException("the remote stream " + remote.address() + " ended after " + samples
                    + " of epoch " + epoch + "'s " + remote.samplesPerEpoch() + " samples"
                    + (remote.isEndOfStream() ? " (its producer served no more epochs)" : ""));
        }
    }

    /** The remote producer's description, so consumers of the relay see what the source is. */
    @Override
    public String description() {
        return remote.sourceDescription();
    }

    @Override
    public void close() {
        remote.close();
    }
}
