package io.tensorsocket.cli;

import io.tensorsocket.BatchSource;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.flight.FlightServe;
import io.tensorsocket.metrics.MetricsEndpoint;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code tensorsocket serve}: runs a producer until its epochs are done. */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = "Run a producer: load each batch once into shared memory and serve it to every consumer.")
final class ServeCommand implements Callable<Integer> {

    @ArgGroup(multiplicity = "1")
    Target target;

    static final class Target {
        @Option(names = "--name", description = "Producer name; consumers connect by it.")
        String name;

        @Option(names = "--dir", description = "Explicit producer directory instead of a name.")
        Path dir;
    }

    @Mixin
    SourceOptions source;

    @Spec
    CommandSpec spec;

    @Option(
            names = "--epochs",
            defaultValue = "1",
            description = "Epochs to serve; 0 serves until stopped (default ${DEFAULT-VALUE}).")
    long epochs;

    @Option(
            names = "--arena-mb",
            description = "Arena size in MiB (default: 8 to 64 batches, within half of the free shared memory).")
    Long arenaMb;

    @Option(names = "--slots", description = "Number of batch slots in the arena (instead of --arena-mb).")
    Integer slots;

    @Option(
            names = "--hello-timeout-s",
            defaultValue = "5",
            description = "Drop a connection that has not said HELLO after this long (default ${DEFAULT-VALUE}).")
    double helloTimeoutS;

    @Option(
            names = "--rubber-band",
            defaultValue = "2",
            description = "Batches kept so late joiners can start at the epoch start (default ${DEFAULT-VALUE}).")
    int rubberBand;

    /** A feeder's claims ahead: its claims' round trips to the producer run while it copies earlier batches. */
    static final int EXTERNAL_CLAIMS_AHEAD = 4;

    @Option(
            names = "--claims-ahead",
            paramLabel = "N",
            description =
                    "Slots the source may fill before it publishes the first of them (default 2; 4 with --external,"
                            + " so that a feeder's claims travel while it copies); each leaves one slot fewer to consumers' batches;"
                            + " lowered, down to 1, where the arena holds fewer than rubber band + claims ahead + 1 slots.")
    Integer claimsAhead;

    @Option(
            names = "--stall-timeout-s",
            defaultValue = "30",
            description = "Evict a consumer that holds everyone up this long (default ${DEFAULT-VALUE}).")
    double stallTimeoutS;

    @Option(
            names = "--idle-timeout-s",
            paramLabel = "SECONDS",
            description = "Stop when no consumer is attached for this long (default 600; with --epochs 0 none:"
                    + " it serves until stopped unless this is given).")
    Double idleTimeoutS;

    @Option(
            names = "--start-grace-ms",
            paramLabel = "MS",
            description = "After the first consumer attaches, wait this long for others before the first batch, so"
                    + " jobs launched together all start at the epoch start (default 2000 with --epochs N, where a"
                    + " late joiner gets only the epochs left, and where a consumer joining mid-epoch would roll; 0,"
                    + " none, for an endless stream whose late joiners get exact epochs anyway; 0 = off).")
    Long startGraceMs;

    @Option(
            names = "--share-key",
            hidden = true,
            description = "Set by TensorConsumer.connectOrServe (train --share): the arguments it started this producer"
                    + " with, which later callers compare with theirs.")
    String shareKey;

    @Option(
            names = "--job-timeout-s",
            defaultValue = "30",
            paramLabel = "SECONDS",
            description = "How long the ranks of a data-parallel job (consume --job) that joined wait for the others"
                    + " before the job fails, naming the missing ranks (default ${DEFAULT-VALUE}).")
    double jobTimeoutS;

    @Option(
            names = "--min-consumers",
            defaultValue = "1",
            description = "Wait for this many consumers before the first batch (default ${DEFAULT-VALUE}).")
    int minConsumers;

    @Option(
            names = "--rings",
            defaultValue = "16",
            paramLabel = "N",
            description = "Hand batches to up to N consumers at once through descriptor rings in shared memory;"
                    + " others, and all with 0, through their sockets (default ${DEFAULT-VALUE}).")
    int rings;

    @Option(
            names = "--lanes",
            defaultValue = "2",
            paramLabel = "N",
            description = "Serve up to N consumers that fall behind from lanes of their own, so the others read at"
                    + " their speed: a lane loads that consumer's batches again (its CPU, at most a private"
                    + " loader's); 0: the slowest sets the pace (default ${DEFAULT-VALUE}).")
    int lanes;

    @Option(
            names = "--lane-idle-cores",
            defaultValue = "0.5",
            paramLabel = "CORES",
            description = "Open a lane only where the host (or its container's CPU quota) left at least this many cores"
                    + " idle over the last 10 s, and at least what the lane would spend (the laggard's pace times the"
                    + " CPU a sample cost the loader of late); else the slowest sets the pace, which costs no CPU; 0:"
                    + " whatever the load (default ${DEFAULT-VALUE}).")
    double laneIdleCores;

    @Option(
            names = "--group",
            paramLabel = "GROUP",
            description = "Also let members of this group connect (default: only this user).")
    String group;

    @Option(
            names = "--metrics",
            paramLabel = "[HOST:]PORT",
            description =
                    "Serve Prometheus/OpenMetrics metrics at http://HOST:PORT/metrics (a bare port binds loopback).")
    String metrics;

    @Mixin
    FlightOptions flight;

    @Option(
            names = "--variant",
            paramLabel = "NAME=TRANSFORMS",
            description = "--images: also serve the same images with other transforms (torchvision style, as"
                    + " --transform) as producer NAME, whose consumers connect by that name; with --cache-mb every"
                    + " variant augments the one decoded copy of each image. Repeatable.")
    List<String> variants = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        InetSocketAddress metricsAddress = metrics == null ? null : MetricsEndpoint.parseAddress(metrics);
        if (source.batchSize == null && !source.kind.external) {
            // Required except with --external: reported as picocli reports any missing option.
            throw new ParameterException(spec.commandLine(), "Missing required option: '--batch-size=<batchSize>'");
        }
        List<Variant> extra = Variant.parseAll(variants, source, target.name);
        BatchSource src = source.build(
                target.name != null ? target.name : target.dir.getFileName().toString());
        TensorProducer.Builder b = rules(TensorProducer.builder().source(src));
        if (target.name != null) {
            b.name(target.name);
        } else {
            b.directory(target.dir);
        }
        // SIGTERM or Ctrl-C at any time, also while the producer still waits for its source (an external
        // producer's feeder), leaves no directory behind.
        AtomicReference<TensorProducer> built = new AtomicReference<>();
        List<TensorProducer> others = new CopyOnWriteArrayList<>();
        CountDownLatch constructed = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            others.forEach(TensorProducer::close);
                            if (built.get() == null) {
                                main.interrupt(); // ends the wait for the source; the half-built producer removes
                                // its directory
                                try {
                                    constructed.await(5, TimeUnit.SECONDS);
                                } catch (InterruptedException ignored) {
                                    // the JVM is going down
                                }
                            }
                            TensorProducer p = built.get();
                            if (p != null) {
                                p.close();
                            }
                        },
                        "tensorsocket-serve-shutdown"));
        TensorProducer producer;
        try {
            producer = b.build();
            built.set(producer);
            for (Variant v : extra) {
                others.add(rules(TensorProducer.builder().source(source.images(v.transforms())))
                        .name(v.name())
                        .build()
                        .start());
            }
        } catch (RuntimeException | Error e) {
            others.forEach(TensorProducer::close);
            throw e;
        } finally {
            constructed.countDown();
        }
        try (TensorProducer p = producer;
                AutoCloseable variantsClosed = () -> others.forEach(TensorProducer::close);
                AutoCloseable cacheClosed = () -> {
                    if (source.cache() != null) {
                        source.cache().close();
                    }
                };
                MetricsEndpoint endpoint = metricsAddress == null ? null : MetricsEndpoint.start(p, metricsAddress);
                FlightServe remote = flight.start(p)) {
            Json ready = Json.object()
                    .put("event", "ready")
                    .put("name", p.name())
                    .put("dir", p.directory().toString())
                    .put("pid", ProcessHandle.current().pid());
            if (endpoint != null) {
                ready.put("metrics", endpoint.url());
            }
            if (remote != null) {
                ready.put("flight", remote.address().toString());
            }
            if (!others.isEmpty()) {
                ready.put(
                        "variants",
                        String.join(
                                ",", others.stream().map(TensorProducer::name).toList()));
            }
            System.out.println(ready);
            System.out.flush();
            p.run();
            for (TensorProducer v : others) {
                while (!v.await(Duration.ofMinutes(1))) {
                    // each variant's epochs to their end, as the main producer's
                }
            }
            System.out.println(Json.object().put("event", "finished").put("batches", p.batchesPublished()));
        }
        return 0;
    }

    /** The serving rules every producer of this command gets (the main one and each variant). */
    private TensorProducer.Builder rules(TensorProducer.Builder b) {
        b.epochs(epochs)
                .rubberBand(rubberBand)
                .stallTimeout(seconds(stallTimeoutS))
                .minConsumers(minConsumers)
                .jobTimeout(seconds(jobTimeoutS))
                .shareKey(shareKey)
                .helloTimeout(seconds(helloTimeoutS))
                .rings(rings)
                .lanes(lanes)
                .laneIdleCores(laneIdleCores);
        if (startGraceMs != null) {
            b.startGrace(Duration.ofMillis(startGraceMs));
        }
        if (idleTimeoutS != null) {
            b.idleTimeout(seconds(idleTimeoutS));
        }
        if (claimsAhead != null || source.kind.external) {
            b.claimsAhead(claimsAhead != null ? claimsAhead : EXTERNAL_CLAIMS_AHEAD);
        }
        if (slots != null) {
            b.slots(slots);
        }
        if (arenaMb != null) {
            b.arenaMiB(arenaMb);
        }
        if (group != null) {
            b.accessGroup(group);
        }
        return b;
    }

    static Duration seconds(double s) {
        if (!(s > 0)) {
            throw new IllegalArgumentException("timeouts must be positive, got " + s);
        }
        return Duration.ofNanos((long) (s * 1e9));
    }
}
