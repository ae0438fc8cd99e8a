package io.tensorsocket.cli;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.StartMode;
import io.tensorsocket.flight.RemoteConsumer;
import io.tensorsocket.flight.RemoteOptions;
import java.util.Iterator;

/** A {@link ConsumerHandle} on a {@link RemoteConsumer}; its own class so local consumers never load Arrow. */
final class RemoteHandle implements ConsumerHandle {
    private final RemoteConsumer c;

    private RemoteHandle(RemoteConsumer c) {
        this.c = c;
    }

    /** A {@link io.tensorsocket.TensorConsumer} on a remote producer, for the commands that train on one. */
    static io.tensorsocket.TensorConsumer tensorConsumer(String uri, ConsumerOptions opts, RemoteOptions remote) {
        return io.tensorsocket.TensorConsumer.of(RemoteConsumer.connect(uri, opts, remote), uri, opts);
    }

    /** The status of a remote producer, asked over Flight. */
    static io.tensorsocket.ProducerStatus status(String uri, RemoteOptions remote, java.time.Duration timeout) {
        return io.tensorsocket.flight.RemoteStatus.query(uri, remote, timeout);
    }

    static ConsumerHandle open(String uri, ConsumerOptions opts, RemoteOptions remote) {
        return new RemoteHandle(RemoteConsumer.connect(uri, opts, remote));
    }

    @Override
    public String sourceDescription() {
        return c.sourceDescription();
    }

    @Override
    public long samplesPerEpoch() {
        return c.samplesPerEpoch();
    }

    @Override
    public long streamPosition(Batch b) {
        return c.streamPosition(b);
    }

    @Override
    public boolean isEndOfStream() {
        return c.isEndOfStream();
    }

    @Override
    public StartMode startMode() {
        return c.startMode();
    }

    @Override
    public long startEpoch() {
        return c.startEpoch();
    }

    @Override
    public String handoff() {
        return "flight";
    }

    @Override
    public Iterator<Batch> iterator() {
        return c.iterator();
    }

    @Override
    public void close() {
        c.close();
    }
}
