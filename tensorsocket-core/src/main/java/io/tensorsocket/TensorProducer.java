package io.tensorsocket;

import io.tensorsocket.consumer.StatusQuery;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.producer.ProducerEngine;
import io.tensorsocket.producer.ProducerSpec;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.spi.RelayBoundaries;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Runs one data loader for many consumers: every batch of the {@link BatchSource} is written once into a
 * shared-memory arena, and each attached {@link TensorConsumer} reads it from there.
 *
 * <pre>{@code
 * try (TensorProducer p = TensorProducer.builder().name("cifar").source(source).epochs(10).build()) {
 *     p.run();   // or p.start() to serve in the background
 * }
 * }</pre>
 *
 * The producer waits (up to the idle timeout) while no consumer is attached, never overwrites a batch a
 * live consumer has not released, and evicts a consumer that holds up everyone for longer than the
 * stall timeout. {@link #close()} stops it and removes its files.
 *
 * <p>Mechanism: a façade over one {@link ProducerEngine}, assembled from the {@link ProducerSpec} the builder
 * makes.
 */
public final class TensorProducer implements AutoCloseable {
    /** The idle cores a lane needs on the host by default ({@link Builder#laneIdleCores}). */
    public static final double DEFAULT_LANE_IDLE_CORES = 0.5;

    static {
        RelayBoundaries.install(new RelayBoundaries.Hooks() {
            @Override
            public UpstreamBoundaries.Answer keep(TensorProducer producer, int consumerId, long epoch, long sample) {
                return producer.engine.keepBoundaryForRelay(consumerId, epoch, sample);
            }

            @Override
            public void release(TensorProducer producer, int consumerId, long sample) {
                producer.engine.releaseBoundaryForRelay(consumerId, sample);
            }
        });
    }

    private final ProducerEngine engine;

    private TensorProducer(ProducerSpec spec) throws IOException {
        this.engine = new ProducerEngine(spec);
    }

    /**
     * Asks the running producer called {@code name}, in this process or another, for its status (what
     * {@code tensorsocket status} shows).
     *
     * @throws ProducerNotFoundException    if no producer of that name is running
     * @throws TensorSocketTimeoutException if it does not answer within {@code timeout}
     */
    public static ProducerStatus queryStatus(String name, Duration timeout) {
        return queryStatus(ProducerDirectory.forName(name), timeout);
    }

    /**
     * Asks the producer in {@code dir} for its status: connects to its control socket, sends a status
     * request and reads the one answer.
     *
     * @throws ProducerNotFoundException    if no producer is running there
     * @throws TensorSocketTimeoutException if it does not answer within {@code timeout}
     */
    public static ProducerStatus queryStatus(Path dir, Duration timeout) {
        return StatusQuery.query(dir, timeout);
    }

    /** A builder; {@link Builder#source(BatchSource)} and a name or directory are required. */
    public static Builder builder() {
        return new Builder();
    }

    /** Starts serving in a background thread and returns at once. */
    public TensorProducer start() {
        engine.start();
        return this;
    }

    /**
     * Serves in the calling thread until the last epoch was consumed (or the producer is closed).
     *
     * @throws ProducerFailedException       if the source threw
     * @throws TensorSocketTimeoutException  if no consumer came within the idle timeout
     */
    public void run() {
        engine.run();
    }

    /**
     * Waits for a started producer to finish.
     *
     * @return false if it was still running after {@code timeout}
     * @throws ProducerFailedException if the source threw
     */
    public boolean await(Duration timeout) throws InterruptedException {
        return engine.await(timeout);
    }

    /** The producer's name. */
    public String name() {
        return engine.name();
    }

    /** The directory holding the producer's socket and arena. */
    public Path directory() {
        return engine.directory();
    }

    /** Consumers attached now. */
    public int consumerCount() {
        return engine.consumerCount();
    }

    /** Batches written to the arena so far. */
    public long batchesPublished() {
        return engine.batchesPublished();
    }

    /**
     * A snapshot of what the producer is doing, the same one {@code tensorsocket status} shows: rates,
     * slots in use and every attached consumer's position, lag and wait share.
     */
    public ProducerStatus status() {
        return engine.status();
    }

    /** Times the source threw (each ends the producer, so this is 0 or 1); for monitoring. */
    public long loaderErrors() {
        return engine.loaderErrors();
    }

    /** Whether the producer has stopped serving. */
    public boolean isFinished() {
        return engine.isFinished();
    }

    /**
     * Stops serving: attached consumers get a {@link ProducerGoneException} on their next call. Removes
     * the producer's socket, arena and directory. Idempotent.
     */
    @Override
    public void close() {
        engine.close();
    }

    /** Options of a producer. */
    public static final class Builder {
        private String name;
        private Path directory;
        private BatchSource source;
        private long arenaBytes;
        private int slots;
        private int rubberBand = 2;
        private int claimsAhead = 2;
        private int rings = DescriptorRings.DEFAULT_RINGS;
        private int lanes = 2;
        private double laneIdleCores = DEFAULT_LANE_IDLE_CORES;
        private long epochs = 1;
        private Duration stallTimeout = Duration.ofSeconds(30);
        /** Null until set: see {@link ProducerSpec#effectiveIdleTimeout(long)}. */
        private Duration idleTimeout;

        private Duration startGrace; // null: the default, which depends on the source
        private Duration jobTimeout = Duration.ofSeconds(30);
        private String shareKey;
        private Duration helloTimeout = Duration.ofSeconds(5);
        private Duration drainTimeout = Duration.ofSeconds(30);
        private int minConsumers = 1;
        private String accessGroup;

        private Builder() {}

        /**
         * Lets members of {@code group} connect too (default: only this user). The producer's directory
         * becomes 0750, its socket and rings file 0660 and its arena 0640, all owned by the group.
         */
        public Builder accessGroup(String group) {
            if (group == null || group.isBlank()) {
                throw new IllegalArgumentException("an access group needs a name");
            }
            this.accessGroup = group;
            return this;
        }

        /** Producer name; its directory is {@code /dev/shm/tensorsocket-<user>/<name>}. */
        public Builder name(String name) {
            ProducerDirectory.checkName(name);
            this.name = name;
            return this;
        }

        /** An explicit directory instead of a name. */
        public Builder directory(Path directory) {
            this.directory = directory;
            return this;
        }

        public Builder source(BatchSource source) {
            this.source = source;
            return this;
        }

        /**
         * Arena size in MiB; the number of slots is what fits. Default: {@link #slots(int)}'s default, within
         * half of the free space of the file system holding the arena.
         */
        public Builder arenaMiB(long mib) {
            if (mib < 1) {
                throw new IllegalArgumentException("arena size must be at least 1 MiB, got " + mib);
            }
            this.arenaBytes = mib << 20;
            return this;
        }

        /**
         * Number of batch slots in the arena. Default: rubber band + claims ahead + 4, at least 8, and for
         * small batches as many as fit in 64 MiB, up to 64; fewer where that would take more than half of
         * the free space of the file system holding the arena (usually {@code /dev/shm}). Where fewer than rubber
         * band + claims ahead + 1 fit, claims ahead are lowered, down to 1: the fewest slots are rubber band + 2.
         */
        public Builder slots(int slots) {
            if (slots < 2) {
                throw new IllegalArgumentException("an arena needs at least 2 slots, got " + slots);
            }
            this.slots = slots;
            return this;
        }

        /**
         * Batches kept after publication so late joiners can still start at the epoch start (default 2).
         * A consumer that joins while its epoch's first batch is among the last {@code batches}
         * published starts at the epoch start; later joiners start where the producer is.
         */
        public Builder rubberBand(int batches) {
            if (batches < 0) {
                throw new IllegalArgumentException("rubber band must be 0 or more batches, got " + batches);
            }
            this.rubberBand = batches;
            return this;
        }

        /**
         * The most slots a source may claim ahead of publishing (default 2; parallel pipelines use more); lowered,
         * down to 1, where the arena holds fewer than rubber band + claims ahead + 1 slots (see {@link #slots}).
         */
        public Builder claimsAhead(int claims) {
            if (claims < 1) {
                throw new IllegalArgumentException("claims ahead must be at least 1, got " + claims);
            }
            this.claimsAhead = claims;
            return this;
        }

        /**
         * How many consumers at once may be handed their batches through a descriptor ring in shared memory
         * (default 16); later ones, and every consumer with 0, are served over their sockets. Each ring costs
         * 128 bytes plus 64 per entry, with about two entries per slot.
         */
        public Builder rings(int rings) {
            if (rings < 0 || rings > 4096) {
                throw new IllegalArgumentException("rings must be 0 to 4096, got " + rings);
            }
            this.rings = rings;
            return this;
        }

        /**
         * How many lanes the producer may run at once (default 2; 0: none). A consumer that falls behind the others (the
         * producer waited for its releases while another consumer read on) is moved to a lane of its own, so the
         * others read at their own speed: the lane loads its batches again, by index, from the same epoch orders, so
         * its epochs stay exact. Each lane costs what a private loader would for that consumer (its CPU, and an arena
         * of a few slots); with every lane busy, the slowest consumer sets the pace. Only a source that loads by index
         * and can load on two threads at once ({@link IndexedSource#loadsConcurrently()}) has lanes, and only Java
         * consumers that are no rank of a job are moved.
         */
        public Builder lanes(int lanes) {
            if (lanes < 0 || lanes > 64) {
                throw new IllegalArgumentException("lanes must be 0 to 64, got " + lanes);
            }
            this.lanes = lanes;
            return this;
        }

        /**
         * The idle cores the host (or the cgroup it runs in, with a CPU quota) must have left over the last 10 s for a
         * lane to open, at the least (default {@value #DEFAULT_LANE_IDLE_CORES}; 0: whatever the host's load).
         * A lane loads its consumer's samples again, which is worth it only with CPU to spare: the host must also have
         * left idle what the lane would spend, the consumer's own pace times the CPU a sample cost the loader of late
         * (the producer's process, or an external feeder's and its workers'). Without it the slowest consumer sets the
         * pace, which costs nothing.
         */
        public Builder laneIdleCores(double cores) {
            if (!(cores >= 0 && cores <= 4096)) {
                throw new IllegalArgumentException("lane idle cores must be 0 to 4096, got " + cores);
            }
            this.laneIdleCores = cores;
            return this;
        }

        /** Epochs to run; 0 runs until closed. Default 1. */
        public Builder epochs(long epochs) {
            if (epochs < 0) {
                throw new IllegalArgumentException("epochs must be 0 (unbounded) or more, got " + epochs);
            }
            this.epochs = epochs;
            return this;
        }

        /** How long the producer waits on one consumer's unreleased batch before evicting it (default 30 s). */
        public Builder stallTimeout(Duration timeout) {
            this.stallTimeout = positive(timeout, "stall timeout");
            return this;
        }

        /**
         * How long the producer waits while no consumer is attached before it stops. Default: 10 min for a
         * producer of a bounded number of epochs; none (it waits until closed) for one that serves until
         * stopped ({@code epochs(0)}), unless set here.
         */
        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = positive(timeout, "idle timeout");
            return this;
        }

        /**
         * After the first consumer attaches, how long the producer waits for others before it publishes the
         * first batch, so consumers launched together, say the jobs of a sweep, all start at the first epoch's start
         * instead of some of them rolling or, in a finite stream, getting fewer epochs. The loader fills its first
         * slots meanwhile. {@link Duration#ZERO} turns it off. Default: 2 s for a finite stream ({@link #epochs}) or a
         * source whose consumers joining mid-epoch would roll; none for an endless stream of a source that loads
         * samples by index ({@link IndexedSource}), whose late joiners get exact epochs anyway.
         */
        public Builder startGrace(Duration grace) {
            if (grace == null || grace.isNegative()) {
                throw new IllegalArgumentException("start grace must be 0 (off) or more, got " + grace);
            }
            this.startGrace = grace;
            return this;
        }

        /**
         * How long the ranks of a data-parallel job ({@link ConsumerOptions#withRank}) that joined wait for the others
         * before their job fails with a message naming the missing ranks (default 30 s). The producer admits a job's
         * ranks together, once all have joined, and serves everyone else meanwhile.
         */
        public Builder jobTimeout(Duration timeout) {
            this.jobTimeout = positive(timeout, "job timeout");
            return this;
        }

        /**
         * What {@code TensorConsumer.connectOrServe} compares: the producer's directory holds it (file
         * {@value io.tensorsocket.directory.ProducerDirectory#SHARE_FILE}) before any consumer can connect.
         */
        public Builder shareKey(String key) {
            this.shareKey = key;
            return this;
        }

        /** How long a new connection may take to say HELLO (default 5 s). */
        public Builder helloTimeout(Duration timeout) {
            this.helloTimeout = positive(timeout, "hello timeout");
            return this;
        }

        /**
         * Consumers to wait for before the first batch (default 1), so a sweep of jobs started together all
         * begin at the first epoch's start. Bounded by the idle timeout. See also {@link #startGrace(Duration)}.
         */
        public Builder minConsumers(int consumers) {
            if (consumers < 1) {
                throw new IllegalArgumentException("min consumers must be at least 1, got " + consumers);
            }
            this.minConsumers = consumers;
            return this;
        }

        /** After the last epoch, how long to wait for consumers to finish reading (default 30 s). */
        public Builder drainTimeout(Duration timeout) {
            this.drainTimeout = Objects.requireNonNull(timeout);
            return this;
        }

        private static Duration positive(Duration d, String what) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, got " + d);
            }
            return d;
        }

        /**
         * Creates the producer: claims its directory, maps and pre-touches the arena and opens the control
         * socket. Serving begins with {@link TensorProducer#start()} or {@link TensorProducer#run()}.
         *
         * @throws ProducerAlreadyRunningException if a live producer holds the name or directory
         * @throws PermissionDeniedException       if the directory belongs to another user
         * @throws SharedMemoryFullException       if the file system holding the arena has too little free space
         * @throws IllegalArgumentException        if the source's description or the socket path is too long
         */
        public TensorProducer build() {
            if ((name == null) == (directory == null)) {
                throw new IllegalArgumentException("give the producer either a name or a directory");
            }
            Objects.requireNonNull(source, "source");
            Path dir = directory != null ? directory : ProducerDirectory.forName(name);
            ProducerSpec spec = new ProducerSpec(
                    name != null ? name : dir.getFileName().toString(),
                    dir,
                    source,
                    arenaBytes,
                    slots,
                    rubberBand,
                    claimsAhead,
                    rings,
                    lanes,
                    laneIdleCores,
                    epochs,
                    stallTimeout,
                    idleTimeout,
                    startGrace,
                    jobTimeout,
                    shareKey,
                    helloTimeout,
                    drainTimeout,
                    minConsumers,
                    accessGroup);
            try {
                return new TensorProducer(spec);
            } catch (IOException e) {
                throw new UncheckedIOException(
                        "could not set up producer '" + (name != null ? name : directory) + "': " + e.getMessage(), e);
            }
        }
    }
}
