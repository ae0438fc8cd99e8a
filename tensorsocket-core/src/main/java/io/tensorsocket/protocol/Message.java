package io.tensorsocket.protocol;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorSpec;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The control messages. Their bytes are defined in {@link WireFormat}; nothing else encodes them.
 */
public sealed interface Message {

    /**
     * Consumer to producer, first message: what the consumer wants. With {@code ring}, it asks to be handed
     * its stream events through a descriptor ring in shared memory rather than over the socket. With a {@code job}
     * (empty: none), it is rank {@code rank} of the {@code worldSize} ranks of that data-parallel job, and takes
     * that rank's share of each epoch ({@link io.tensorsocket.stream.RankShare}); without, rank 0 of 1. With
     * {@code lanes}, it can be moved to a lane of its own ({@link Move}) when it falls behind the others.
     */
    record Hello(
            int batchSize,
            boolean dropLast,
            long pid,
            String client,
            StartPolicy startPolicy,
            boolean ring,
            String job,
            int rank,
            int worldSize,
            boolean lanes)
            implements Message {
        public Hello {
            Objects.requireNonNull(startPolicy, "startPolicy");
            Objects.requireNonNull(job, "job");
        }

        /** A HELLO of a consumer that cannot be moved to a lane. */
        public Hello(
                int batchSize,
                boolean dropLast,
                long pid,
                String client,
                StartPolicy startPolicy,
                boolean ring,
                String job,
                int rank,
                int worldSize) {
            this(batchSize, dropLast, pid, client, startPolicy, ring, job, rank, worldSize, false);
        }

        /** A HELLO of a consumer that is no rank of a job. */
        public Hello(int batchSize, boolean dropLast, long pid, String client, StartPolicy startPolicy, boolean ring) {
            this(batchSize, dropLast, pid, client, startPolicy, ring, "", 0, 1);
        }

        /** A HELLO that is handed its stream over the socket. */
        public Hello(int batchSize, boolean dropLast, long pid, String client, StartPolicy startPolicy) {
            this(batchSize, dropLast, pid, client, startPolicy, false);
        }

        /** A HELLO that joins at once ({@link StartPolicy#JOIN_NOW}), handed its stream over the socket. */
        public Hello(int batchSize, boolean dropLast, long pid, String client) {
            this(batchSize, dropLast, pid, client, StartPolicy.JOIN_NOW);
        }

        /** Whether the consumer is a rank of a job. */
        public boolean inJob() {
            return !job.isEmpty();
        }
    }

    /**
     * Producer to consumer, answer to {@link Hello}: where the data is and where the consumer starts.
     * {@code ring} is the consumer's descriptor ring in the producer's rings file, or {@link #NO_RING}: its
     * stream comes over the socket (it did not ask for a ring, or none was free). {@code midEpoch} is how any
     * consumer joining this producer mid-epoch starts: {@link StartMode#EXACT} where the producer chooses the order,
     * {@link StartMode#ROLLING} where its source does.
     */
    record Welcome(
            long sessionId,
            int consumerId,
            long producerPid,
            String arenaPath,
            int slotCount,
            long slotBytes,
            int producerBatchSize,
            List<TensorSpec> tensors,
            long samplesPerEpoch,
            long epochs,
            StartMode startMode,
            long startEpoch,
            long startSample,
            String source,
            int ring,
            StartMode midEpoch)
            implements Message {
        public static final int NO_RING = -1;

        public Welcome {
            tensors = List.copyOf(tensors);
            if (midEpoch == StartMode.EPOCH_START) {
                throw new IllegalArgumentException("a mid-epoch start is rolling or exact, not " + midEpoch);
            }
        }

        /** A WELCOME whose consumer is handed its stream over the socket. */
        public Welcome(
                long sessionId,
                int consumerId,
                long producerPid,
                String arenaPath,
                int slotCount,
                long slotBytes,
                int producerBatchSize,
                List<TensorSpec> tensors,
                long samplesPerEpoch,
                long epochs,
                StartMode startMode,
                long startEpoch,
                long startSample,
                String source) {
            this(
                    sessionId,
                    consumerId,
                    producerPid,
                    arenaPath,
                    slotCount,
                    slotBytes,
                    producerBatchSize,
                    tensors,
                    samplesPerEpoch,
                    epochs,
                    startMode,
                    startEpoch,
                    startSample,
                    source,
                    NO_RING,
                    StartMode.ROLLING);
        }

        /** This WELCOME for consumer {@code id}, with descriptor ring {@code ring} (or {@link #NO_RING}). */
        public Welcome forConsumer(int id, int ring) {
            return new Welcome(
                    sessionId,
                    id,
                    producerPid,
                    arenaPath,
                    slotCount,
                    slotBytes,
                    producerBatchSize,
                    tensors,
                    samplesPerEpoch,
                    epochs,
                    startMode,
                    startEpoch,
                    startSample,
                    source,
                    ring,
                    midEpoch);
        }
    }

    /**
     * Producer to consumer, in its stream: from here on its batches come from lane {@code lane}
     * ({@link io.tensorsocket.producer.Lane}), whose arena is {@code lane-<lane>} beside the producer's, of
     * {@code slotCount} slots shaped as the producer's, batch {@code seq} in slot {@code (seq - seqBase) % slotCount}.
     * The consumer answers {@link Moved}; no batch of the main stream comes after this.
     */
    record Move(int lane, int slotCount, long seqBase) implements Message {}

    /**
     * Consumer to producer, answer to {@link Move}: it keeps the batches it was sent up to stream position
     * {@code position} and gave back the rest, untouched; its lane starts there.
     */
    record Moved(long position) implements Message {}

    /** Producer to consumer: batch {@code seq} of the stream sits in {@code slot}. */
    record BatchReady(long seq, int slot, long epoch, long index, long sampleStart, int samples) implements Message {}

    /** Consumer to producer: the consumer no longer reads batch {@code seq}. */
    record Release(long seq) implements Message {}

    /** Producer to consumer: producer epoch {@code epoch} ended after {@code batches} batches. */
    record EpochEnd(long epoch, long batches, long samples) implements Message {}

    /** Producer to consumer: the producer ran its last epoch; no batch follows. */
    record EndOfStream(long epochs) implements Message {}

    /** Either side: something went wrong; the sender closes the connection after it. */
    record Error(ErrorCode code, String message) implements Message {}

    /** Consumer to producer: orderly goodbye; everything the consumer held is released. */
    record Bye() implements Message {}

    /**
     * A client's first message instead of {@link Hello}: asks for one {@link Status}, after which the
     * producer closes the connection. The client does not become a consumer.
     */
    record StatusRequest() implements Message {}

    /** Producer to a status client: a snapshot of the producer and its consumers. */
    record Status(ProducerStatus status) implements Message {}

    /**
     * Consumer to producer, about once a second: what the consumer observed of itself, for status
     * reports. Cumulative since it connected: its own epoch number, samples handed to the training loop,
     * time spent inside the iterator waiting for data, and time spent outside it (working).
     */
    record Progress(long epoch, long samples, long waitNanos, long workNanos) implements Message {}

    /**
     * Producer to consumer, about once a second while nothing else was sent to it: the producer's process
     * is alive. The consumer answers each with a heartbeat of its own, so the producer never queues more
     * than a few to a consumer that stopped reading.
     */
    record Heartbeat() implements Message {}

    /**
     * Feeder to producer, first message on the feeder socket of an external producer: the tensors every
     * batch holds (per-sample shapes), the loader's batch size, samples per epoch, epochs (0 = until it
     * stops) and the description consumers receive. A feeder that loads samples by index declares
     * {@code datasetSize} (above 0), whether epochs are shuffled and the seed: the producer then chooses each
     * epoch's order and sends it ({@link EpochOrder}); with {@code datasetSize} 0 the feeder keeps its own order.
     * {@code lanes}: how many lane connections ({@link FeederLaneHello}) the feeder opens once welcomed, 0 for none.
     * {@code shmReserve}: the bytes of shared memory its loader's worker processes need beside the arena (a PyTorch
     * DataLoader's workers hand their batches over in {@code /dev/shm}: workers × prefetch × batch bytes), which the
     * arena's default size leaves them.
     */
    record FeederHello(
            long pid,
            String client,
            int batchSize,
            long samplesPerEpoch,
            long epochs,
            String description,
            List<TensorSpec> tensors,
            long datasetSize,
            boolean shuffle,
            long seed,
            int lanes,
            long shmReserve)
            implements Message {
        public FeederHello {
            tensors = List.copyOf(tensors);
        }

        /** A FEEDER_HELLO whose loader needs no shared memory beside the arena. */
        public FeederHello(
                long pid,
                String client,
                int batchSize,
                long samplesPerEpoch,
                long epochs,
                String description,
                List<TensorSpec> tensors,
                long datasetSize,
                boolean shuffle,
                long seed,
                int lanes) {
            this(
                    pid,
                    client,
                    batchSize,
                    samplesPerEpoch,
                    epochs,
                    description,
                    tensors,
                    datasetSize,
                    shuffle,
                    seed,
                    lanes,
                    0);
        }
    }

    /**
     * Feeder to producer, the first frame of a lane connection: the feeder of pid {@code pid}, attached, offers to load
     * the batches of a lane ({@link LaneStart}) on this connection beside its main one.
     */
    record FeederLaneHello(long pid) implements Message {}

    /**
     * Producer to feeder, on a lane connection: load batches for lane {@code lane}, whose arena is the file
     * {@code arenaPath}, shaped as the producer's; an {@link EpochOrder} of the samples follows, then the frames of an
     * epoch as on the main connection (claims into the lane's arena, publishes, the epoch's end).
     */
    record LaneStart(int lane, String arenaPath) implements Message {}

    /**
     * Producer to feeder on a lane connection (stop the lane's work now: drop what you hold and claim no more), and
     * the feeder's answer once it has; the connection is then free for the next lane.
     */
    record LaneStop(int lane) implements Message {}

    /**
     * Producer to feeder, while a claim of the feeder's waits: no consumer is attached any more (they read and left),
     * and the claims wait until one comes. The feeder may stop loading meanwhile (the Python feeder ends its loader's
     * workers and loads on from where it stood once a slot is granted).
     */
    record Paused() implements Message {}

    /** Feeder that loads by index to producer, before each epoch: send epoch {@code epoch}'s order. */
    record OrderRequest(long epoch) implements Message {}

    /**
     * Consumer to producer, before its HELLO: continue my epoch from a checkpoint. Its epoch begins at stream position
     * {@code epochBase}, {@code handed} samples of its share were read before the checkpoint; the orders it was read
     * under are those a source of order key {@code orderKey} (its seed), {@code datasetSize} samples,
     * {@code samplesPerEpoch} an epoch and {@code shuffle} draws over {@code draws}: epoch, boundary count, the
     * boundaries, then the next draw ({@code ChunkedShuffle}), from a fresh draw on. The producer serves the rest of
     * that epoch by index, then the stream ends for this connection.
     */
    record Resume(
            long epochBase,
            long handed,
            long orderKey,
            int datasetSize,
            long samplesPerEpoch,
            boolean shuffle,
            long[] draws)
            implements Message {
        /** The most longs {@code draws} may hold. */
        public static final int MAX_DRAWS = 8000;

        @Override
        public boolean equals(Object o) {
            return o instanceof Resume r
                    && r.epochBase == epochBase
                    && r.handed == handed
                    && r.orderKey == orderKey
                    && r.datasetSize == datasetSize
                    && r.samplesPerEpoch == samplesPerEpoch
                    && r.shuffle == shuffle
                    && Arrays.equals(r.draws, draws);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(epochBase) * 31 + Arrays.hashCode(draws);
        }

        @Override
        public String toString() {
            return "Resume[epochBase=" + epochBase + ", handed=" + handed + ", draws=" + Arrays.toString(draws) + "]";
        }
    }

    /**
     * Producer to a feeder that loads by index, answer to {@link OrderRequest}: the ids {@code first} to
     * {@code first + ids.length - 1} of epoch {@code epoch}'s order, which holds {@code total} ids; frames follow
     * until the order is complete.
     */
    record EpochOrder(long epoch, int first, int total, int[] ids) implements Message {
        /** The most ids one frame carries. */
        public static final int MAX_IDS = 16_000;

        @Override
        public boolean equals(Object o) {
            return o instanceof EpochOrder e
                    && e.epoch == epoch
                    && e.first == first
                    && e.total == total
                    && Arrays.equals(e.ids, ids);
        }

        @Override
        public int hashCode() {
            return Objects.hash(epoch, first, total, Arrays.hashCode(ids));
        }

        @Override
        public String toString() {
            return "EpochOrder[epoch=" + epoch + ", first=" + first + ", total=" + total + ", ids=" + ids.length + "]";
        }
    }

    /** Producer to feeder, answer to {@link FeederHello}: the arena file to map and how many slots it may hold. */
    record FeederWelcome(long producerPid, String arenaPath, int claimsAhead) implements Message {}

    /** Feeder to producer: asks for a slot to fill with the next batch. */
    record Claim() implements Message {}

    /** Producer to feeder, answer to {@link Claim}: batch {@code seq} goes into the slot at {@code offset} of the arena file. */
    record SlotGrant(long seq, long offset) implements Message {}

    /** Feeder to producer: the slot of batch {@code seq} holds {@code samples} samples and may be served. */
    record Publish(long seq, int samples) implements Message {}

    /** Feeder to producer: its epoch {@code epoch} ended after {@code samples} samples. */
    record FeederEpochEnd(long epoch, long samples) implements Message {}

    /** Why an {@link Error} was sent. Codes are wire values and never change. */
    enum ErrorCode {
        VERSION_MISMATCH(1),
        BAD_FRAME(2),
        BAD_REQUEST(3),
        EVICTED(4),
        LOADER_FAILED(5),
        PRODUCER_CLOSED(6),
        INTERNAL(7),
        /** From a feeder: it stops (interrupted); its producer stops at once, even at an epoch boundary. */
        STOPPED(8),
        /** To a rank of a job: the job cannot go on (a rank died, or not all of them joined in time). */
        JOB_FAILED(9);

        private final int code;

        ErrorCode(int code) {
            this.code = code;
        }

        public int code() {
            return code;
        }

        public static ErrorCode fromCode(int code) {
            for (ErrorCode c : values()) {
                if (c.code == code) {
                    return c;
                }
            }
            return INTERNAL;
        }
    }
}
