package io.tensorsocket;

import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.DescriptorRings;
import io.tensorsocket.arena.Futex;
import io.tensorsocket.arena.ProducerDirectory;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.arena.SpaceReservation;
import io.tensorsocket.producer.ProducerCore;
import io.tensorsocket.producer.ProducerServer;
import io.tensorsocket.producer.ServingRules;
import io.tensorsocket.protocol.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.security.SecureRandom;
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
    private final ProducerDirectory directory;
    private final SharedArena arena;
    /** The consumers' descriptor rings, or null where the platform has no futexes. */
    private final DescriptorRings rings;
    private final ProducerCore core;
    private final ProducerServer server;
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
        ProducerDirectory.checkSocketPathFits(dir.toAbsolutePath().normalize());
        long sessionId = new SecureRandom().nextLong();
        long pid = ProcessHandle.current().pid();
        this.pid = pid;
        ProducerDirectory d = ProducerDirectory.claim(dir, b.accessGroup);
        SharedArena a = null;
        DescriptorRings r = null;
        ProducerServer srv = null;
        int slots;
        ArenaLayout layout;
        BatchLayout batch;
        try {
            try {
                source.awaitLayout(d.path());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ProducerGoneException("producer '" + name + "' was stopped while it waited for its source's"
                        + " layout (an external producer's feeder)");
            }
            batch = source.layout();
            this.firstEpoch = source.firstEpoch();
            long count = source.epochs(b.epochs);
            this.epochs = count == 0 ? 0 : firstEpoch + count;
            this.description = checkedDescription(source);
            slots = b.slotCount(batch, d.path(), name);
            layout = ArenaLayout.of(batch, slots);
            a = SharedArena.create(d.arenaPath(), layout, sessionId, pid);
            d.share(d.arenaPath(), false);
            this.core = new ProducerCore(a, new ServingRules(source.samplesPerEpoch(), firstEpoch, this.epochs, b.rubberBand,
                    b.claimsAhead, b.stallTimeout, b.effectiveIdleTimeout(count), b.minConsumers, b.startGrace, name));
            if (Futex.supported() && b.rings > 0) {
                try {
                    r = DescriptorRings.create(d.ringsPath(), b.rings, slots, sessionId);
                } catch (SharedMemoryFullException e) {
                    // The arena fitted and matters more: serve over sockets rather than not at all.
                    log.warn("no room for the consumers' descriptor rings ({} bytes, {} free); producer '{}' hands"
                            + " every batch over its consumer's socket", e.bytesNeeded(), e.bytesFree(), name);
                }
            }
            if (r != null) {
                d.share(d.ringsPath(), true);
                core.handOffThrough(r);
            }
            String arenaPath = d.arenaPath().toString();
            srv = new ProducerServer(d.socketPath(), core, b.helloTimeout, start -> new Message.Welcome(
                    sessionId, 0, pid, arenaPath, slots, layout.slotBytes(), batch.batchSize(), batch.tensors(),
                    source.samplesPerEpoch(), epochs, start.mode(), start.epoch(), start.sample(), this.description));
            d.share(d.socketPath(), true);
            this.server = srv;
        } catch (IOException | RuntimeException | Error e) {
            // Whatever failed, nothing of this producer stays behind: socket, arena, lock and directory go.
            try {
                source.close();
            } catch (Exception ce) {
                e.addSuppressed(ce);
            }
            if (srv != null) {
                srv.close();
            }
            if (a != null) {
                a.close();
            }
            if (r != null) {
                r.close();
            }
            d.close();
            throw e;
        }
        this.directory = d;
        this.arena = a;
        this.rings = r;
        log.info("producer '{}' serves {} in {}: {} slots of {} KiB ({} samples each), rubber band {} batches", name,
                description, dir, slots, layout.slotBytes() / 1024, batch.batchSize(), b.rubberBand);
    }

    /**
     * The source's description, which every WELCOME carries. One longer than the protocol's string limit is
     * refused here rather than cut: sources such as the synthetic one put parameters in it that consumers
     * parse, and a cut description would be wrong data, not just shorter text.
     */
    private static String checkedDescription(BatchSource source) {
        String description = Objects.requireNonNull(source.description(), "source description");
        int bytes = description.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (bytes > BatchSource.MAX_DESCRIPTION_BYTES) {
            throw new IllegalArgumentException("the description of source " + source.getClass().getName() + " is " + bytes
                    + " UTF-8 bytes, more than the " + BatchSource.MAX_DESCRIPTION_BYTES + " the protocol carries; make its"
                    + " description() shorter (it starts: \"" + description.substring(0, Math.min(60, description.length()))
                    + "...\")");
        }
        return description;
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
        long epoch = firstEpoch;
        try {
            for (; epochs == 0 || epoch < epochs; epoch++) {
                long publishedBefore = core.batchesPublished();
                try {
                    source.emitEpoch(epoch, core);
                } catch (SourceStoppedException e) {
                    if (e.now() || core.batchesPublished() != publishedBefore) {
                        throw new SourceStopped(e.getMessage());
                    }
                    log.info("producer '{}': {}; the stream ends after {} epochs", name, e.getMessage(), epoch - firstEpoch);
                    break;
                } catch (ProducerCore.Stopped | TensorSocketTimeoutException e) {
                    throw e;
                } catch (Throwable t) {
                    throw new LoaderFailure(epoch, t);
                }
                core.endEpoch(epoch);
            }
            core.endStream(epoch);
            log.info("producer '{}' finished {} epochs; waiting up to {} s for consumers to finish", name, epoch - firstEpoch,
                    drainTimeout.toSeconds());
            core.awaitConsumersGone(drainTimeout);
        } catch (ProducerCore.Stopped e) {
            if (!closing) {
                failure = new ProducerGoneException("producer '" + name + "' stopped: " + e.getMessage());
            }
        } catch (SourceStopped e) {
            String msg = "producer '" + name + "' stopped: " + e.getMessage();
            log.info(msg);
            failure = new ProducerGoneException(msg);
            core.shutdown("stopped", new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, msg));
        } catch (LoaderFailure e) {
            loaderErrors++;
            // A failure this project reports (a feeder's) says all in its message; a loader's own exception
            // keeps its stack trace in the log.
            boolean reported = e.getCause() instanceof TensorSocketException;
            String msg = "the loader of producer '" + name + "' failed in epoch " + e.epoch + ": "
                    + (reported ? e.getCause().getMessage() : e.getCause());
            if (reported) {
                log.error(msg);
            } else {
                log.error(msg, e.getCause());
            }
            failure = new ProducerFailedException(msg, e.getCause());
            core.shutdown("loader failed", new Message.Error(Message.ErrorCode.LOADER_FAILED, msg));
        } catch (TensorSocketTimeoutException e) {
            log.warn(e.getMessage());
            failure = e;
        } catch (RuntimeException | Error e) {
            String msg = "producer '" + name + "' failed: " + e;
            log.error(msg, e);
            failure = new ProducerFailedException(msg, e);
            core.shutdown("failed", new Message.Error(Message.ErrorCode.LOADER_FAILED, msg));
        } finally {
            core.shutdown("finished", null);
            finished.countDown();
        }
    }

    /** The source stopped the stream in the middle of an epoch (see {@link SourceStoppedException}). */
    private static final class SourceStopped extends RuntimeException {
        SourceStopped(String message) {
            super(message, null, false, false);
        }
    }

    private static final class LoaderFailure extends RuntimeException {
        final long epoch;

        LoaderFailure(long epoch, Throwable cause) {
            super(cause);
            this.epoch = epoch;
        }
    }

    /** The producer's name. */
    public String name() {
        return name;
    }

    /** The directory holding the producer's socket and arena. */
    public Path directory() {
        return directory.path();
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
        server.close();
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
        arena.close();
        if (rings != null) {
            rings.close();
        }
        directory.close();
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
        private long epochs = 1;
        private Duration stallTimeout = Duration.ofSeconds(30);
        /** Null until set: see {@link #effectiveIdleTimeout(long)}. */
        private Duration idleTimeout;
        private Duration startGrace = Duration.ofSeconds(2);
        private Duration helloTimeout = Duration.ofSeconds(5);
        private Duration drainTimeout = Duration.ofSeconds(30);
        private int minConsumers = 1;
        private String accessGroup;

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

        int slotCount(BatchLayout batch, Path dir, String producer) throws IOException {
            int min = Math.max(2, rubberBand + claimsAhead + 1);
            long slotBytes = ArenaLayout.slotBytesFor(batch);
            int n;
            if (slots > 0) {
                n = slots;
            } else if (arenaBytes > 0) {
                n = (int) Math.min(Integer.MAX_VALUE, ArenaLayout.slotsThatFit(batch, arenaBytes));
            } else {
                n = defaultSlotCount(batch, slotBytes, min, dir, producer);
            }
            if (n < min) {
                long neededMiB = (ArenaLayout.HEADER_BYTES + slotBytes * min + (1 << 20) - 1) >> 20;
                throw new IllegalArgumentException("the arena holds " + n + " slots of " + (slotBytes >> 10)
                        + " KiB (a batch of " + batch.batchSize() + " samples); this producer needs at least " + min
                        + " (rubber band " + rubberBand + " + claims ahead " + claimsAhead + " + 1): give it at least "
                        + neededMiB + " MiB or lower the rubber band");
            }
            return n;
        }

        /**
         * Slots when the user chose neither a count nor a size: rubber band + claims ahead + 4, at least 8,
         * and for small batches as many as fit in 64 MiB, up to 64; but no more than half of what the file
         * system holding the arena has free, so a small {@code /dev/shm} (64 MB in a default Docker container)
         * still works and leaves room for others. Never below {@code min}: where even that does not fit,
         * reserving the arena reports the file system as full.
         */
        private static int defaultSlotCount(BatchLayout batch, long slotBytes, int min, Path dir, String producer)
                throws IOException {
            long cheap = Math.min(64, (64L << 20) / slotBytes);
            int wanted = (int) Math.max(Math.max(8, min + 3), cheap);
            long free = SpaceReservation.usableBytes(dir);
            long share = free / 2;
            int n = wanted;
            String why = "that is the default for " + (slotBytes >> 10) + " KiB batches";
            if (ArenaLayout.HEADER_BYTES + wanted * slotBytes > share) {
                n = (int) Math.max(min, Math.min(wanted, ArenaLayout.slotsThatFit(batch, share)));
                why = "the default " + wanted + " slots (" + mib(ArenaLayout.HEADER_BYTES + wanted * slotBytes)
                        + " MiB) would take more than half of the free space";
            }
            log.info("arena of producer '{}': {} slots of {} KiB = {} MiB, because {}; {} MiB free in {} (set --arena-mb"
                    + " or --slots to choose)", producer, n, slotBytes >> 10, mib(ArenaLayout.HEADER_BYTES + n * slotBytes),
                    why, mib(free), dir);
            return n;
        }

        private static String mib(long bytes) {
            return String.format(java.util.Locale.ROOT, "%.1f", bytes / (double) (1 << 20));
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
