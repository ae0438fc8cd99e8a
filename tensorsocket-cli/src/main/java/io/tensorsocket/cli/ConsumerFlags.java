package io.tensorsocket.cli;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.flight.RemoteOptions;
import java.util.Arrays;
import java.util.List;
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

    @Option(
            names = "--wait-for-epoch-start",
            description = "Arriving too late to start at the current epoch's start, wait for the next epoch's start"
                    + " instead of starting mid-epoch (exact, or rolling for a source that fixes its own order).")
    boolean waitForEpochStart;

    @Option(
            names = "--liveness-s",
            defaultValue = "10",
            paramLabel = "SECONDS",
            description = "Report the producer as not responding after hearing nothing from it, not even its"
                    + " heartbeat, for this long while waiting (default ${DEFAULT-VALUE}).")
    double livenessS;

    @Option(
            names = "--job",
            paramLabel = "NAME",
            description =
                    "Read as a rank of this data-parallel job: the job's ranks share each epoch, each taking an"
                            + " equal share (as DistributedSampler deals them); the producer starts them together once all joined.")
    String job;

    @Option(
            names = "--rank",
            paramLabel = "R",
            description =
                    "This consumer's rank in its --job, 0 to world size - 1 (default: $RANK, as torchrun sets it).")
    Integer rank;

    @Option(
            names = "--world-size",
            paramLabel = "W",
            description = "How many ranks its --job has (default: $WORLD_SIZE, as torchrun sets it).")
    Integer worldSize;

    /** Consumer options of {@code batchSize} with these flags. */
    ConsumerOptions options(int batchSize) {
        ConsumerOptions o = ConsumerOptions.batchSize(batchSize)
                .withLiveness(ServeCommand.seconds(livenessS))
                .withStartPolicy(waitForEpochStart ? StartPolicy.NEXT_EPOCH_START : StartPolicy.JOIN_NOW);
        if (job == null) {
            if (rank != null || worldSize != null) {
                throw new IllegalArgumentException(
                        "--rank and --world-size place a consumer in a job: name it with --job");
            }
            return o;
        }
        return o.withRank(
                job,
                rank != null ? rank : fromEnvironment("RANK", "--rank"),
                worldSize != null ? worldSize : fromEnvironment("WORLD_SIZE", "--world-size"));
    }

    private static int fromEnvironment(String variable, String flag) {
        String v = System.getenv(variable);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(
                    "--job needs " + flag + " (or " + variable + " in the environment, as" + " torchrun sets it)");
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    variable + "='" + v + "' in the environment is not a number; give " + flag + " instead");
        }
    }

    @Option(
            names = "--share",
            paramLabel = "SERVE-ARGS",
            description = "Start the producer --name names if none runs on this host, as tensorsocket serve --name NAME"
                    + " SERVE-ARGS (e.g. \"--idx /data/fmnist --batch-size 256\"), a process of its own that stays"
                    + " --linger-s after its last consumer: every trial of a sweep runs the same line. A running"
                    + " producer started otherwise is refused, saying how.")
    String share;

    @Option(
            names = "--linger-s",
            defaultValue = "60",
            paramLabel = "SECONDS",
            description =
                    "With --share: how long the producer stays after its last consumer left (default ${DEFAULT-VALUE}).")
    double lingerS;

    /**
     * Connects to the producer named, with {@code remote}'s options for a {@code grpc://} one; with {@code --share},
     * first starting it as {@code serve --name NAME SERVE-ARGS} if none runs ({@link TensorConsumer#connectOrServe}).
     */
    TensorConsumer connect(ConsumerOptions options, RemoteOptions remote) {
        if (share != null) {
            if (target.name == null || RemoteAccess.isRemote(target.name)) {
                throw new IllegalArgumentException("--share starts a producer on this host: name it with --name, not "
                        + (target.name != null ? target.name : "--dir"));
            }
            List<String> args = Arrays.stream(share.trim().split("\\s+"))
                    .filter(a -> !a.isEmpty())
                    .toList();
            return TensorConsumer.connectOrServe(target.name, options, args, ServeCommand.seconds(lingerS));
        }
        if (options.jobRank() != null && target.name != null && RemoteAccess.isRemote(target.name)) {
            throw new IllegalArgumentException("the ranks of a job read from a producer on their own host; --job is not"
                    + " available over Flight (" + target.name + ")");
        }
        return RemoteAccess.open(target.name, target.dir, options, remote);
    }
}
