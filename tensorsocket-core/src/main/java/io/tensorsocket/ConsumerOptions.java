package io.tensorsocket;

import java.time.Duration;
import java.util.Objects;

/**
 * What a {@link TensorConsumer} asks for and how long it waits. Start from {@link #batchSize(int)} and
 * change what you need with the {@code with...} methods.
 *
 * @param batchSize      samples per batch this consumer receives, whatever the producer's batch size
 * @param dropLast       drop each epoch's last batch if it is smaller than {@code batchSize}
 * @param connectTimeout how long to wait for the producer to appear (its directory, its socket, an external
 *                       producer's feeder) and to answer HELLO; default {@link #DEFAULT_CONNECT_TIMEOUT}
 * @param batchTimeout   how long to wait for the next batch before giving up; keep it above the
 *                       producer's stall timeout, since a stalled peer can hold everyone up that long
 * @param liveness       how long a waiting consumer accepts hearing nothing at all from the producer (a
 *                       live producer sends a heartbeat every second while it has nothing else to send)
 *                       before it reports the producer as not responding
 * @param startPolicy    what to do when arriving too late to start at the current epoch's start
 * @param client         who this consumer is, as the producer's {@code status} shows it; null: this
 *                       process's command (a Flight server sets the remote peer's address here)
 * @param spinWait       how long a consumer waiting for a batch polls for it before it sleeps: a batch
 *                       arriving within it is taken without a thread wake-up, at the cost of a busy core
 *                       while waiting; zero (the default) sleeps at once
 * @param ringHandoff    have batches handed over through a descriptor ring in shared memory, a sleeping
 *                       consumer woken by a futex (the default; on Linux x86_64 and aarch64), rather than
 *                       announced over the socket; the socket still carries releases, heartbeats and errors
 * @param jobRank        the consumer's rank in a data-parallel job, whose ranks share each epoch; null: none
 * @param threadConfinedBatches each batch is used only by the thread that took it from the consumer, which also
 *                       releases it (asks for the next, or closes it or the consumer): releasing a batch then
 *                       costs no JVM-wide handshake; another thread touching its tensors gets a
 *                       {@code WrongThreadException}. Released from another thread, a batch's typed accessors
 *                       refuse at once but its raw views stay readable by its own thread (a consumer closed so
 *                       keeps its shared memory mapped until the process ends). Off by default: batches may go
 *                       to other threads
 */
public record ConsumerOptions(
        int batchSize,
        boolean dropLast,
        Duration connectTimeout,
        Duration batchTimeout,
        Duration liveness,
        StartPolicy startPolicy,
        String client,
        Duration spinWait,
        boolean ringHandoff,
        JobRank jobRank,
        boolean threadConfinedBatches) {
    /** The default {@link #liveness()}: ten missed heartbeats. */
    public static final Duration DEFAULT_LIVENESS = Duration.ofSeconds(10);
    /**
     * The default {@link #connectTimeout()}: 60 s. Jobs are launched together, and the producer may come last:
     * a Python feeder imports torch, starts the producer's JVM and loads its first batch before the producer
     * opens its socket (3 to 5 s alone on 2 cores, several times that while three trainers import torch too).
     * A consumer that waits says so after {@link #WAIT_NOTICE_AFTER}, naming the producers that run, so a
     * mistyped name costs attention only once.
     */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(60);
    /** How long a consumer waits quietly for a producer that is not there yet before it says, once, that it waits. */
    public static final Duration WAIT_NOTICE_AFTER = Duration.ofSeconds(3);

    public ConsumerOptions {
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        Objects.requireNonNull(batchTimeout, "batchTimeout");
        Objects.requireNonNull(liveness, "liveness");
        Objects.requireNonNull(startPolicy, "startPolicy");
        Objects.requireNonNull(spinWait, "spinWait");
        if (connectTimeout.isNegative()
                || connectTimeout.isZero()
                || batchTimeout.isNegative()
                || batchTimeout.isZero()) {
            throw new IllegalArgumentException("timeouts must be positive");
        }
        if (liveness.compareTo(Duration.ofSeconds(2)) < 0) {
            throw new IllegalArgumentException("liveness of " + liveness.toMillis() + " ms is too short: the producer"
                    + " sends a heartbeat once a second, so allow at least 2 s");
        }
        if (spinWait.isNegative() || spinWait.compareTo(Duration.ofSeconds(1)) > 0) {
            throw new IllegalArgumentException("spin wait of " + spinWait.toMillis() + " ms is out of range: 0 to 1 s"
                    + " (a few hundred microseconds is what cuts a handoff's latency)");
        }
    }

    /** Options whose batches may be used by any thread. */
    public ConsumerOptions(
            int batchSize,
            boolean dropLast,
            Duration connectTimeout,
            Duration batchTimeout,
            Duration liveness,
            StartPolicy startPolicy,
            String client,
            Duration spinWait,
            boolean ringHandoff,
            JobRank jobRank) {
        this(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                false);
    }

    /** Options of a consumer that is no rank of a job. */
    public ConsumerOptions(
            int batchSize,
            boolean dropLast,
            Duration connectTimeout,
            Duration batchTimeout,
            Duration liveness,
            StartPolicy startPolicy,
            String client,
            Duration spinWait,
            boolean ringHandoff) {
        this(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                null);
    }

    /** Options handed batches through a descriptor ring. */
    public ConsumerOptions(
            int batchSize,
            boolean dropLast,
            Duration connectTimeout,
            Duration batchTimeout,
            Duration liveness,
            StartPolicy startPolicy,
            String client,
            Duration spinWait) {
        this(batchSize, dropLast, connectTimeout, batchTimeout, liveness, startPolicy, client, spinWait, true);
    }

    /** Options with the default liveness, start policy, client label, hand-off and no spinning. */
    public ConsumerOptions(int batchSize, boolean dropLast, Duration connectTimeout, Duration batchTimeout) {
        this(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                DEFAULT_LIVENESS,
                StartPolicy.JOIN_NOW,
                null,
                Duration.ZERO);
    }

    /** Batch size {@code batchSize}, last batch kept, 60 s to connect, 120 s per batch, 10 s liveness, join now. */
    public static ConsumerOptions batchSize(int batchSize) {
        return new ConsumerOptions(batchSize, false, DEFAULT_CONNECT_TIMEOUT, Duration.ofMinutes(2));
    }

    public ConsumerOptions withDropLast(boolean dropLast) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    public ConsumerOptions withConnectTimeout(Duration timeout) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                timeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    public ConsumerOptions withBatchTimeout(Duration timeout) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                timeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    /** How long a waiting consumer hears nothing from the producer before it reports it as not responding. */
    public ConsumerOptions withLiveness(Duration liveness) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    /** What to do when arriving after the current epoch's start has left the rubber band. */
    public ConsumerOptions withStartPolicy(StartPolicy policy) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                policy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    /**
     * How a Flight server labels the local consumer it opens for each remote one ({@code flight HOST:PORT}, see
     * {@link #withClient}): the producer and {@code status} then name that consumer by its peer, not by the
     * server's pid.
     */
    public static final String REMOTE_CLIENT_PREFIX = "flight ";

    /** Labels this consumer in the producer's status (e.g. the host it serves); null for this process's command. */
    public ConsumerOptions withClient(String label) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                label,
                spinWait,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    /** Polls for up to {@code spin} while waiting for a batch, before sleeping (see {@link #spinWait()}). */
    public ConsumerOptions withSpinWait(Duration spin) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spin,
                ringHandoff,
                jobRank,
                threadConfinedBatches);
    }

    /**
     * Whether batches come through a descriptor ring in shared memory (true, the default) or are announced
     * over the socket (see {@link #ringHandoff()}). Where the platform has no futexes, or the producer has no
     * ring left, the socket is used whatever this says.
     */
    public ConsumerOptions withRingHandoff(boolean ring) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ring,
                jobRank,
                threadConfinedBatches);
    }

    /**
     * Joins as rank {@code rank} of the {@code worldSize} ranks of data-parallel job {@code job} (see {@link JobRank}):
     * this consumer then takes its rank's share of every epoch. The producer admits the job's ranks once all of them
     * have joined, all at one start; a rank that dies fails its job ({@link JobFailedException} for the others).
     */
    public ConsumerOptions withRank(String job, int rank, int worldSize) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                new JobRank(job, rank, worldSize),
                threadConfinedBatches);
    }

    /**
     * Whether each batch stays with the thread that took it (see {@link #threadConfinedBatches()}): a consumer that
     * trains on each batch in the thread that iterates saves a handshake with every thread of the JVM per batch.
     */
    public ConsumerOptions withThreadConfinedBatches(boolean confined) {
        return new ConsumerOptions(
                batchSize,
                dropLast,
                connectTimeout,
                batchTimeout,
                liveness,
                startPolicy,
                client,
                spinWait,
                ringHandoff,
                jobRank,
                confined);
    }
}
