package io.tensorsocket;

import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.consumer.StatusQuery;
import io.tensorsocket.producer.ProducerCore;
import io.tensorsocket.producer.ProducerParts;
import io.tensorsocket.protocol.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

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
 */
public final class TensorProducer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TensorProducer.class);

    private final String name;
    private final BatchSource source;
    /** The number of the first epoch served (a relay's: its upstream's); see {@link BatchSource#firstEpoch()}. */
    private final long firstEpoch;
    /** The epoch the stream ends before, or 0 for none. */
    private final long epochs;
    private final Duration drainTimeout;
    /** Its directory, arena, rings and socket. */
    private final ProducerParts parts;
    private final ProducerCore core;
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile Thread thread;
    private final String description;
    private final long pid;
    private volatile Throwable failure;
    private volatile boolean closing;
    private volatile long loaderErrors;

    private TensorProducer(Builder b) throws IOException {
        this.source = Objects.requireNonNull(b.source, "source");
        Path dir = b.directory != null ? b.directory : ProducerDirectory.forName(b.name);
        this.name = b.name != null ? b.name : dir.getFileName().toString();
        this.drainTimeout = b.drainTimeout;
        this.pid = ProcessHandle.current().pid();
        ProducerAssembly.Assembled made = ProducerAssembly.assemble(b, name, dir, pid);
        this.parts = made.parts();
        this.core = made.core();
        this.description = made.description();
        this.firstEpoch = made.firstEpoch();
        this.epochs = made.epochs();
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
        synchronized (this) {
            if (thread != null) {
                throw new IllegalStateException("producer '" + name + "' was already started");
            }
            thread = Thread.ofPlatform().name("tensorsocket-producer-" + name).start(this::loop);
        }
        return this;
    }

    /**
     * Serves in the calling thread until the last epoch was consumed (or the producer is closed).
     *
     * @throws ProducerFailedException       if the source threw
     * @throws TensorSocketTimeoutException  if no consumer came within the idle timeout
     */
    public void run() {
        synchronized (this) {
            if (thread != null) {
                throw new IllegalStateException("producer '" + name + "' was already started");
            }
            thread = Thread.currentThread();
        }
        loop();
        rethrowFailure();
    }

    /**
     * Waits for a started producer to finish.
     *
     * @return false if it was still running after {@code timeout}
     * @throws ProducerFailedException if the source threw
     */
    public boolean await(Duration timeout) throws InterruptedException {
        if (!finished.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return false;
        }
        rethrowFailure();
        return true;
    }

    private void rethrowFailure() {
        Throwable f = failure;
        if (f instanceof TensorSocketException e) {
            throw e;
        }
        if (f != null) {
            throw new ProducerFailedException("producer '" + name + "' failed: " + f, f);
        }
    }

    private void loop() {
        try {
            EpochLoop.Outcome outcome = new EpochLoop(name, source, core, firstEpoch, epochs, drainTimeout, () -> closing).run();
            failure = outcome.failure();
            loaderErrors = outcome.loaderErrors();
        } finally {
            core.shutdown("finished", null);
            finished.countDown();
        }
    }

    /** The producer's name. */
    public String name() {
        return name;
    }

    /** The directory holding the producer's socket and arena. */
    public Path directory() {
        return parts.directory().path();
    }

    /** Consumers attached now. */
    public int consumerCount() {
        return core.consumerCount();
    }

    /** Batches written to the arena so far. */
    public long batchesPublished() {
        return core.batchesPublished();
    }

    /**
     * A snapshot of what the producer is doing, the same one {@code tensorsocket status} shows: rates,
     * slots in use and every attached consumer's position, lag and wait share.
     */
    public ProducerStatus status() {
        return core.status(pid, description);
    }

    /**
     * For consumer {@code consumerId}, which relays this stream to consumers of its own: keeps offset {@code sample}
     * of epoch {@code epoch}, where one of them joined the relay, as a boundary of this producer's next epochs, so that
     * its epochs are exact too (see {@link UpstreamBoundaries}; a Flight server asks on a remote relay's behalf).
     */
    public UpstreamBoundaries.Answer keepBoundaryForRelay(int consumerId, long epoch, long sample) {
        return core.keepBoundaryForRelay(consumerId, epoch, sample);
    }

    /** The relay's consumer that joined at {@code sample} left: the boundary kept for it goes. */
    public void releaseBoundaryForRelay(int consumerId, long sample) {
        core.releaseBoundaryForRelay(consumerId, sample);
    }

    /** Times the source threw (each ends the producer, so this is 0 or 1); for monitoring. */
    public long loaderErrors() {
        return loaderErrors;
    }

    /** Whether the producer has stopped serving. */
    public boolean isFinished() {
        return finished.getCount() == 0;
    }

    /**
     * Stops serving: attached consumers get a {@link ProducerGoneException} on their next call. Removes
     * the producer's socket, arena and directory. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        core.shutdown("closed", new Message.Error(Message.ErrorCode.PRODUCER_CLOSED,
                "producer '" + name + "' was closed"));
        parts.closeServer();
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            try {
                if (!finished.await(10, TimeUnit.SECONDS)) {
                    log.warn("the source of producer '{}' did not stop within 10 s; closing the arena under it", name);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            source.close();
        } catch (Exception e) {
            log.warn("closing the source failed: {}", e.toString());
        }
        parts.close();
    }

    /** Options of a producer. */
    public static final class Builder {
        String name;
        Path directory;
        BatchSource source;
        long arenaBytes;
        int slots;
        int rubberBand = 2;
        int claimsAhead = 2;
        int rings = DescriptorRings.DEFAULT_RINGS;
        long epochs = 1;
        Duration stallTimeout = Duration.ofSeconds(30);
        /** Null until set: see {@link #effectiveIdleTimeout(long)}. */
        Duration idleTimeout;
        Duration startGrace = Duration.ofSeconds(2);
        Duration jobTimeout = Duration.ofSeconds(30);
        String shareKey;
        Duration helloTimeout = Duration.ofSeconds(5);
        Duration drainTimeout = Duration.ofSeconds(30);
        int minConsumers = 1;
        String accessGroup;

        private Builder() {
        }

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
         * the free space of the file system holding the arena (usually {@code /dev/shm}), but never fewer than
         * rubber band + claims ahead + 1.
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

        /** How many slots a source may claim ahead of publishing (default 2; parallel pipelines use more). */
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
         * first batch (default 2 s; {@link Duration#ZERO} turns it off), so consumers launched together, say
         * the jobs of a sweep, all start at the first epoch's start instead of some of them rolling. The
         * loader fills its first slots meanwhile.
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

        /** The idle timeout in force: the one set, else 10 min, or none (null) for a producer that serves until stopped. */
        Duration effectiveIdleTimeout(long servedEpochs) {
            if (idleTimeout != null) {
                return idleTimeout;
            }
            return servedEpochs == 0 ? null : Duration.ofMinutes(10);
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
            try {
                return new TensorProducer(this);
            } catch (IOException e) {
                throw new UncheckedIOException("could not set up producer '" + (name != null ? name : directory) + "': "
                        + e.getMessage(), e);
            }
        }
    }
}
