package io.tensorsocket.cli;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.flight.RemoteOptions;
import java.nio.file.Path;
import java.util.Iterator;

/** What the verifying commands need of a consumer, local ({@link TensorConsumer}) or remote ({@link RemoteConsumer}). */
interface ConsumerHandle extends Iterable<Batch>, AutoCloseable {

    String sourceDescription();

    long samplesPerEpoch();

    long streamPosition(Batch batch);

    boolean isEndOfStream();

    StartMode startMode();

    /** The producer epoch in which this consumer's first epoch begins. */
    long startEpoch();

    /** How batches reach this consumer: "ring", "socket" or "flight". */
    String handoff();

    @Override
    void close();

    /** Whether {@code name} is a {@code grpc://} or {@code grpc+tls://} address (checked without loading Arrow). */
    static boolean isRemote(String name) {
        String n = name.toLowerCase(java.util.Locale.ROOT);
        return n.startsWith("grpc://") || n.startsWith("grpc+tls://");
    }

    /** Opens a local consumer by name or directory, or a remote one when the name is a {@code grpc://} address. */
    static ConsumerHandle open(String name, Path dir, ConsumerOptions opts, RemoteOptions remote) {
        if (name != null && isRemote(name)) {
            return RemoteHandle.open(name, opts, remote); // loads Arrow only when asked for
        }
        TensorConsumer c = name != null ? TensorConsumer.connect(name, opts) : TensorConsumer.connect(dir, opts);
        return new ConsumerHandle() {
            public String sourceDescription() { return c.sourceDescription(); }
            public long samplesPerEpoch() { return c.samplesPerEpoch(); }
            public long streamPosition(Batch b) { return c.streamPosition(b); }
            public boolean isEndOfStream() { return c.isEndOfStream(); }
            public StartMode startMode() { return c.startMode(); }
            public long startEpoch() { return c.startEpoch(); }
            public String handoff() { return c.ringHandoff() ? "ring" : "socket"; }
            public Iterator<Batch> iterator() { return c.iterator(); }
            public void close() { c.close(); }
        };
    }
}
