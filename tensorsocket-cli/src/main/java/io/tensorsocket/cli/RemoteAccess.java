package io.tensorsocket.cli;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.flight.RemoteConsumer;
import io.tensorsocket.flight.RemoteOptions;
import io.tensorsocket.flight.RemoteStatus;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/** What the commands ask of a remote producer; its own class so that local consumers never load Arrow. */
final class RemoteAccess {

    private RemoteAccess() {}

    /** Whether {@code name} is a {@code grpc://} or {@code grpc+tls://} address (checked without loading Arrow). */
    static boolean isRemote(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return n.startsWith("grpc://") || n.startsWith("grpc+tls://");
    }

    /** A consumer by name or directory, remote (with {@code remote}'s options) when the name is a {@code grpc://} address. */
    static TensorConsumer open(String name, Path dir, ConsumerOptions opts, RemoteOptions remote) {
        if (name != null && isRemote(name)) {
            return RemoteConsumer.tensorConsumer(name, opts, remote);
        }
        return name != null ? TensorConsumer.connect(name, opts) : TensorConsumer.connect(dir, opts);
    }

    /** The status of a remote producer, asked over Flight. */
    static ProducerStatus status(String uri, RemoteOptions remote, Duration timeout) {
        return RemoteStatus.query(uri, remote, timeout);
    }
}
