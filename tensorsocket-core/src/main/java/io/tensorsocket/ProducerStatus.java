package io.tensorsocket;

import java.util.List;
import java.util.Locale;

/**
 * A snapshot of a running producer, as it answers a status request on its control socket (the same
 * socket consumers use; nothing listens anywhere else). All numbers were taken under the producer's
 * lock at one instant.
 *
 * <p>Positions are stream positions: producer epoch × samples per epoch + sample. Rates are measured
 * over the last few seconds. A consumer's {@code waitNanos}, {@code workNanos}, {@code samplesConsumed}
 * and {@code samplesPerSecond} are what the consumer itself reports about once a second (time inside
 * the iterator waiting for data vs time the training loop spent outside it); {@code reported} is false
 * until its first report arrives.
 *
 * @param state              what the producer is doing now
 * @param consumersAttached  consumers attached (the list holds at most {@link #MAX_LISTED} of them)
 * @param evictions          consumers disconnected since the start because they held a batch past the stall timeout
 * @param midEpoch           how a consumer joining mid-epoch starts: {@link StartMode#EXACT} or {@link StartMode#ROLLING}
 * @param cache              the source's decoded-sample cache, {@link Cache#NONE} where it has none
 * @param seed               the seed its source draws its shuffles from, or null where the source does not say
 */
public record ProducerStatus(
        long producerPid,
        String name,
        String source,
        State state,
        int producerBatchSize,
        long samplesPerEpoch,
        long epochs,
        long epoch,
        long sample,
        long batchesPublished,
        long samplesPublished,
        double samplesPerSecond,
        int slotCount,
        long slotBytes,
        int slotsInUse,
        int rubberBand,
        int windowBatches,
        long uptimeNanos,
        int consumersAttached,
        long evictions,
        StartMode midEpoch,
        Cache cache,
        List<Consumer> consumers,
        Long seed) {

    /** Most consumers a status message lists; the count of attached consumers is always exact. */
    public static final int MAX_LISTED = 256;

    public ProducerStatus {
        consumers = List.copyOf(consumers);
    }

    /**
     * What a source's decoded-sample cache holds and did since the producer started: samples kept the first time they
     * were decoded, while room was left ({@code bytesHeld} of {@code capacityBytes}; {@code samplesHeld} of the data
     * set's {@code samples}), and the loads that found their sample kept ({@code hits}) or decoded it ({@code loads}).
     * Variants of one data set that share a cache report the same figures.
     */
    public record Cache(long capacityBytes, long bytesHeld, long samplesHeld, long samples, long hits, long loads) {
        /** A source without a cache. */
        public static final Cache NONE = new Cache(0, 0, 0, 0, 0, 0);

        /** Whether the source has a cache. */
        public boolean present() {
            return capacityBytes > 0;
        }
    }

    /** What the producer is doing. Wire values are the ordinals and never change order. */
    public enum State {
        /** Waiting for the first (or minimum number of) consumers, or paused with none attached. */
        WAITING_FOR_CONSUMERS,
        /** Serving batches. */
        SERVING,
        /** The last epoch was produced; waiting for consumers to finish reading. */
        DRAINING,
        /** Shutting down. */
        CLOSING;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * One attached consumer.
     *
     * @param position     stream position up to which it has released everything
     * @param lagSamples   samples the producer has published beyond {@code position}
     * @param epoch        the consumer's own epoch number (from its last report; else from its position)
     * @param client       who the consumer is, as it said when it joined: its command, or for a remote
     *                     consumer served over Flight the remote peer ({@code flight 10.0.0.7:51234}); at
     *                     most {@link #MAX_CLIENT} characters
     * @param paceShare    the share (0 to 1) of the producer's last pace window (10 s) it spent waiting for this
     *                     consumer to release batches while other consumers were attached: from
     *                     {@link #SETS_PACE_SHARE} on, this consumer {@linkplain #setsPace() sets the pace}
     * @param lane         0 where it reads the main stream, else the number of the lane that serves it (it fell
     *                     behind the others and the producer no longer waits for it)
     * @param laneSamples  samples its lane loaded again for it: what reading at its own pace costs the producer
     * @param streamEnd    the stream position its stream ends at, or -1 while it runs on: the end of the last epoch a
     *                     finite stream owes it (its tail loaded again once the stream's epochs were published), or the
     *                     end of the epoch it resumes from a checkpoint
     * @param resuming     whether it is being served the rest of an epoch it resumes from a checkpoint
     */
    public record Consumer(
            int id,
            long pid,
            String user,
            int batchSize,
            boolean dropLast,
            StartMode startMode,
            long epoch,
            long position,
            long lagSamples,
            int batchesHeld,
            long batchesSent,
            boolean reported,
            long samplesConsumed,
            double samplesPerSecond,
            long waitNanos,
            long workNanos,
            long connectedNanos,
            String client,
            boolean ring,
            String job,
            int rank,
            int worldSize,
            double paceShare,
            int lane,
            long laneSamples,
            long streamEnd,
            boolean resuming) {
        /** Longest client label a status carries. */
        public static final int MAX_CLIENT = 100;

        /**
         * From this {@link #paceShare()} on, a consumer sets the pace: the others read at its speed, not their own.
         */
        public static final double SETS_PACE_SHARE = 0.5;

        public Consumer {
            client = client == null ? "" : client.length() > MAX_CLIENT ? client.substring(0, MAX_CLIENT) : client;
            job = job == null ? "" : job;
        }

        /**
         * Samples of its stream left to it where its stream ends ({@link #streamEnd} set: the tail of a finite stream, or
         * a resumed epoch), else -1.
         */
        public long samplesLeft() {
            return streamEnd < 0 ? -1 : Math.max(0, streamEnd - position);
        }

        /** A consumer of the main stream. */
        public Consumer(
                int id,
                long pid,
                String user,
                int batchSize,
                boolean dropLast,
                StartMode startMode,
                long epoch,
                long position,
                long lagSamples,
                int batchesHeld,
                long batchesSent,
                boolean reported,
                long samplesConsumed,
                double samplesPerSecond,
                long waitNanos,
                long workNanos,
                long connectedNanos,
                String client,
                boolean ring,
                String job,
                int rank,
                int worldSize,
                double paceShare) {
            this(
                    id,
                    pid,
                    user,
                    batchSize,
                    dropLast,
                    startMode,
                    epoch,
                    position,
                    lagSamples,
                    batchesHeld,
                    batchesSent,
                    reported,
                    samplesConsumed,
                    samplesPerSecond,
                    waitNanos,
                    workNanos,
                    connectedNanos,
                    client,
                    ring,
                    job,
                    rank,
                    worldSize,
                    paceShare,
                    0,
                    0,
                    -1,
                    false);
        }

        /** A consumer that is no rank of a job. */
        public Consumer(
                int id,
                long pid,
                String user,
                int batchSize,
                boolean dropLast,
                StartMode startMode,
                long epoch,
                long position,
                long lagSamples,
                int batchesHeld,
                long batchesSent,
                boolean reported,
                long samplesConsumed,
                double samplesPerSecond,
                long waitNanos,
                long workNanos,
                long connectedNanos,
                String client,
                boolean ring) {
            this(
                    id,
                    pid,
                    user,
                    batchSize,
                    dropLast,
                    startMode,
                    epoch,
                    position,
                    lagSamples,
                    batchesHeld,
                    batchesSent,
                    reported,
                    samplesConsumed,
                    samplesPerSecond,
                    waitNanos,
                    workNanos,
                    connectedNanos,
                    client,
                    ring,
                    "",
                    0,
                    1,
                    0);
        }

        /** Whether the producer waited for it most of its last pace window, holding the other consumers back. */
        public boolean setsPace() {
            return paceShare >= SETS_PACE_SHARE;
        }

        /** Whether a lane serves it ({@link #lane()}). */
        public boolean inLane() {
            return lane > 0;
        }

        /** Whether it is a rank of a job ({@link #job()}, {@link #rank()} of {@link #worldSize()}). */
        public boolean inJob() {
            return !job.isEmpty();
        }

        /** A consumer served over its socket (no descriptor ring). */
        public Consumer(
                int id,
                long pid,
                String user,
                int batchSize,
                boolean dropLast,
                StartMode startMode,
                long epoch,
                long position,
                long lagSamples,
                int batchesHeld,
                long batchesSent,
                boolean reported,
                long samplesConsumed,
                double samplesPerSecond,
                long waitNanos,
                long workNanos,
                long connectedNanos,
                String client) {
            this(
                    id,
                    pid,
                    user,
                    batchSize,
                    dropLast,
                    startMode,
                    epoch,
                    position,
                    lagSamples,
                    batchesHeld,
                    batchesSent,
                    reported,
                    samplesConsumed,
                    samplesPerSecond,
                    waitNanos,
                    workNanos,
                    connectedNanos,
                    client,
                    false);
        }

        /** How its batches reach it: "ring" (a descriptor ring in shared memory) or "socket". */
        public String handoff() {
            return ring ? "ring" : "socket";
        }

        /** Fraction of reported time the consumer spent waiting for data (0 to 1), or NaN before a report. */
        public double waitFraction() {
            long total = waitNanos + workNanos;
            return reported && total > 0 ? (double) waitNanos / total : Double.NaN;
        }
    }

    /** Where the producer is in its current epoch, 0 to 1. */
    public double epochProgress() {
        return samplesPerEpoch == 0 ? 0 : (double) sample / samplesPerEpoch;
    }
}
