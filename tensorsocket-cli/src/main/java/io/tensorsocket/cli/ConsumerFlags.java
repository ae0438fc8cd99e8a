package io.tensorsocket.cli;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.flight.RemoteOptions;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Option;

/**
 * The options every consuming command has (a picocli mixin): which producer (by name, a {@code grpc://}
 * address, or a directory), whether a late joiner waits for the next epoch start, and how long a silent
 * producer is waited on.
 */
final class ConsumerFlags {

    @ArgGroup(multiplicity = "1")
    ServeCommand.Target target;

    @Option(names = "--wait-for-epoch-start",
            description = "Arriving too late to start at the current epoch's start, wait for the next epoch's start"
                    + " instead of starting mid-epoch (exact, or rolling for a source that fixes its own order).")
    boolean waitForEpochStart;

    @Option(names = "--liveness-s", defaultValue = "10", paramLabel = "SECONDS",
            description = "Report the producer as not responding after hearing nothing from it, not even its"
                    + " heartbeat, for this long while waiting (default ${DEFAULT-VALUE}).")
    double livenessS;

    /** Consumer options of {@code batchSize} with these flags. */
    ConsumerOptions options(int batchSize) {
        return ConsumerOptions.batchSize(batchSize).withLiveness(ServeCommand.seconds(livenessS))
                .withStartPolicy(waitForEpochStart ? StartPolicy.NEXT_EPOCH_START : StartPolicy.JOIN_NOW);
    }

    /** Connects to the producer named, with {@code remote}'s options for a {@code grpc://} one. */
    TensorConsumer connect(ConsumerOptions options, RemoteOptions remote) {
        return RemoteAccess.open(target.name, target.dir, options, remote);
    }
}
