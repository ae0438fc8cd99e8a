package io.tensorsocket.cli;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code tensorsocket consume}: reads epochs from a producer and checks every sample of a synthetic
 * source against the generator, printing one JSON line per epoch.
 */
@Command(
        name = "consume",
        mixinStandardHelpOptions = true,
        description = "Consume from a producer, verify every sample, and print one JSON line per epoch.")
final class ConsumeCommand implements Callable<Integer> {

    @Mixin
    ConsumerFlags consumer;

    @Option(names = "--batch-size", required = true, description = "This consumer's batch size.")
    int batchSize;

    @Option(names = "--epochs", description = "Epochs to consume (default: until the producer's stream ends).")
    Long epochs;

    @Option(names = "--drop-last", description = "Drop each epoch's last batch if it is short.")
    boolean dropLast;

    @Option(
            names = "--step-ms",
            defaultValue = "0",
            description = "Sleep this long per batch, standing in for training.")
    double stepMs;

    @Option(
            names = "--connect-timeout-s",
            defaultValue = "60",
            description = "Wait this long for the producer to appear and answer (default ${DEFAULT-VALUE}).")
    double connectTimeoutS;

    @Option(names = "--batch-timeout-s", defaultValue = "120", description = "Wait this long for any one batch.")
    double batchTimeoutS;

    @Option(
            names = "--ids-out",
            paramLabel = "FILE",
            description = "Also write every batch received to FILE, one line each: its stream position, then the ids of"
                    + " its samples (to compare what several consumers saw at the same positions).")
    Path idsOut;

    @Option(
            names = "--spin-us",
            defaultValue = "0",
            paramLabel = "MICROSECONDS",
            description = "While waiting for a batch, poll for it this long before sleeping: lower latency for a busy"
                    + " core (0 to 1000000; default ${DEFAULT-VALUE}).")
    long spinUs;

    /** How a local consumer asks to be handed its batches. */
    enum Handoff {
        ring,
        socket
    }

    @Option(
            names = "--handoff",
            defaultValue = "ring",
            paramLabel = "ring|socket",
            description = "How batches are handed over: ring (a descriptor ring in shared memory; a waiting consumer"
                    + " sleeps on a futex) or socket (announced over the control socket) (default ${DEFAULT-VALUE}).")
    Handoff handoff;

    @Option(
            names = "--progress-ms",
            defaultValue = "0",
            description = "Also print a progress line (samples so far) at most this often; 0: never (default).")
    long progressMs;

    @Mixin
    RemoteClientOptions remote;

    @Override
    public Integer call() throws Exception {
        ConsumerOptions opts = consumer.options(batchSize)
                .withDropLast(dropLast)
                .withConnectTimeout(ServeCommand.seconds(connectTimeoutS))
                .withBatchTimeout(ServeCommand.seconds(batchTimeoutS))
                .withSpinWait(Duration.ofNanos(spinUs * 1000))
                .withRingHandoff(handoff == Handoff.ring);
        try (TensorConsumer c = consumer.connect(opts, remote.build(epochs == null ? 0 : epochs))) {
            String description = c.sourceDescription();
            if (!description.startsWith(SyntheticSpec.PREFIX)) {
                throw new IllegalStateException("the producer serves '" + description
                        + "', not synthetic data; consume can only verify synthetic sources");
            }
            SyntheticSpec spec = SyntheticSpec.parse(description);
            long samplesPerEpoch = c.samplesPerEpoch();
            long expected = dropLast ? samplesPerEpoch / batchSize * batchSize : samplesPerEpoch;
            String failure = null;
            long samplesSoFar = 0;
            long lastProgress = System.nanoTime();
            boolean seededOrder = SyntheticSpec.seededOrder(description);
            try (SyntheticVerifier v = new SyntheticVerifier(spec, seededOrder);
                    IdLog ids = IdLog.open(idsOut)) {
                for (long e = 0; epochs == null || e < epochs; e++) {
                    long epoch = -1;
                    long started = System.nanoTime();
                    long asked = started;
                    long longestWait = 0;
                    for (Batch b : c) {
                        longestWait = Math.max(longestWait, System.nanoTime() - asked);
                        epoch = b.epoch();
                        if (c.jobRank() == null) {
                            v.accept(b, c.streamPosition(b));
                        } else {
                            v.accept(b, i -> c.streamPosition(b, i));
                        }
                        ids.write(i -> c.streamPosition(b, i), c.jobRank() == null, b);
                        samplesSoFar += b.size();
                        if (progressMs > 0 && System.nanoTime() - lastProgress >= progressMs * 1_000_000) {
                            lastProgress = System.nanoTime();
                            System.out.println(
                                    Json.object().put("event", "progress").put("samples", samplesSoFar));
                            System.out.flush();
                        }
                        if (stepMs > 0) {
                            Thread.sleep((long) stepMs, (int) ((stepMs % 1) * 1e6));
                        }
                        asked = System.nanoTime();
                    }
                    double seconds = (System.nanoTime() - started) / 1e9;
                    SyntheticVerifier.EpochCounts counts = v.finishEpoch();
                    if (counts.samples() == 0 && c.isEndOfStream()) {
                        break;
                    }
                    boolean complete = counts.samples() == expected;
                    boolean exactStart = c.startMode().exactEpochs();
                    Json line = Json.object()
                            .put("epoch", epoch)
                            .put("batches", counts.batches())
                            .put("samples", counts.samples())
                            .put("expected", expected)
                            .put("unique", counts.unique())
                            .put("duplicates", counts.duplicates())
                            .put("corrupt", counts.corrupt())
                            .put("out_of_order", counts.outOfOrder())
                            .put("order", seededOrder ? "seeded" : "producer")
                            .put("start", c.startMode().label())
                            .put("start_epoch", c.startEpoch())
                            .put("start_sample", c.startSample())
                            .put("handoff", c.handoff());
                    if (c.jobRank() != null) {
                        line.put("job", c.jobRank().job())
                                .put("rank", c.jobRank().rank())
                                .put("world_size", c.jobRank().worldSize());
                    }
                    line.put("complete", complete)
                            .put("batch_size", batchSize)
                            .put("seconds", seconds)
                            .put("samples_per_s", counts.samples() / Math.max(seconds, 1e-9))
                            .put("longest_wait_ms", longestWait / 1_000_000);
                    System.out.println(line);
                    System.out.flush();
                    if (!counts.intact()) {
                        failure = "epoch " + epoch + ": " + counts.corrupt() + " corrupt and " + counts.outOfOrder()
                                + " out-of-order samples";
                    } else if (exactStart
                            && complete
                            && (dropLast ? counts.duplicates() > 0 : !counts.exact(samplesPerEpoch))) {
                        failure = "epoch " + epoch + " delivered " + counts.unique() + " distinct of " + samplesPerEpoch
                                + " samples with " + counts.duplicates() + " duplicates";
                    } else if (!complete && !c.isEndOfStream()) {
                        failure =
                                "epoch " + epoch + " ended after " + counts.samples() + " of " + expected + " samples";
                    }
                    if (failure != null || (c.isEndOfStream() && epochs == null)) {
                        break; // asked for more epochs than the stream has: the next says how many it got
                    }
                }
            }
            if (failure != null) {
                throw new IllegalStateException(failure);
            }
        }
        return 0;
    }
}
