package io.tensorsocket.protocol;

import static io.tensorsocket.protocol.Fields.bool;
import static io.tensorsocket.protocol.Fields.getBool;
import static io.tensorsocket.protocol.Fields.getString;
import static io.tensorsocket.protocol.Fields.getTensors;
import static io.tensorsocket.protocol.Fields.nonNegative;
import static io.tensorsocket.protocol.Fields.positive;
import static io.tensorsocket.protocol.Fields.putString;
import static io.tensorsocket.protocol.Fields.putTensors;
import static io.tensorsocket.protocol.Fields.startPolicy;
import static io.tensorsocket.protocol.Fields.truncate;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSpec;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The control protocol's bytes, as specified in docs/PROTOCOL.md (which also states the rules: who
 * releases what, ordering, validation, error codes, versioning); this class is the Java side of it and
 * the only Java code that encodes frames. Every integer is little-endian.
 *
 * <pre>
 * frame:
 *   0        4         6      7      8               12
 *   ┌────────┬─────────┬──────┬──────┬───────────────┬──────────────────────────┐
 *   │ magic  │ version │ type │  0   │ payload bytes │ payload                  │
 *   │ u32    │ u16     │ u8   │ u8   │ u32 ≤ 65536   │                          │
 *   └────────┴─────────┴──────┴──────┴───────────────┴──────────────────────────┘
 *   magic = "TSKT"; version = {@value #VERSION}. The header and the ERROR payload keep this form in
 *   every version, so peers of different versions can always tell each other so.
 *
 * payloads (str = u16 byte count + UTF-8, at most 4096 bytes; bool = u8 0 or 1):
 *   1 HELLO        i32 batchSize, bool dropLast, i64 pid, str client, u8 startPolicy (0 join now,
 *                  1 next epoch start), bool ring (hand the stream through a descriptor ring), str job (empty:
 *                  none), i32 rank, i32 worldSize (0 and 1 without a job; else 0 ≤ rank < worldSize), bool lanes
 *                  (it can be moved to a lane: MOVE)
 *   2 WELCOME      i64 sessionId, i32 consumerId, i64 producerPid, str arenaPath, i32 slotCount,
 *                  i64 slotBytes, i32 producerBatchSize, i64 samplesPerEpoch, i64 epochs (0 = unbounded),
 *                  u8 startMode (0 epoch start, 1 rolling, 2 exact), i64 startEpoch, i64 startSample, str source,
 *                  u16 tensorCount, then per tensor: str name, u8 dtype, u8 rank, rank × i64 sampleDims,
 *                  i32 ring (the consumer's ring in the rings file beside the arena, -1: over the socket),
 *                  u8 midEpoch (how any consumer joining mid-epoch starts: 1 rolling, 2 exact)
 *   3 BATCH        i64 seq, i32 slot, i64 epoch, i64 index, i64 sampleStart, i32 samples
 *   4 RELEASE      i64 seq
 *   5 EPOCH_END    i64 epoch, i64 batches, i64 samples
 *   6 END          i64 epochs
 *   7 ERROR        i32 code, str message (codes: 1 VERSION_MISMATCH, 2 BAD_FRAME, 3 BAD_REQUEST, 4 EVICTED,
 *                  5 LOADER_FAILED, 6 PRODUCER_CLOSED, 7 INTERNAL, 8 STOPPED, 9 JOB_FAILED)
 *   8 BYE          (empty)
 *   9 STATUS_REQ   (empty); a client's first message instead of HELLO: the producer answers STATUS and closes
 *  10 STATUS       i64 producerPid, str name, str source, u8 state (0 waiting for consumers, 1 serving,
 *                  2 draining, 3 closing), i32 producerBatchSize, i64 samplesPerEpoch, i64 epochs, i64 epoch,
 *                  i64 sample, i64 batchesPublished, i64 samplesPublished, f64 samplesPerSecond,
 *                  i32 slotCount, i64 slotBytes, i32 slotsInUse, i32 rubberBand, i32 windowBatches,
 *                  i64 uptimeNanos, i32 consumersAttached, i64 evictions, u8 midEpoch (as in WELCOME),
 *                  i64 cacheCapacityBytes, i64 cacheBytes, i64 cacheSamplesHeld, i64 cacheSamples,
 *                  i64 cacheHits, i64 cacheLoads (the source's decoded-sample cache; all 0 without one),
 *                  u16 listed (≤ 256), then per consumer:
 *                    i32 id, i64 pid, str user, i32 batchSize, bool dropLast, u8 startMode (as in WELCOME), i64 epoch,
 *                    i64 position, i64 lagSamples, i32 batchesHeld, i64 batchesSent, bool reported,
 *                    i64 samplesConsumed, f64 samplesPerSecond, i64 waitNanos, i64 workNanos,
 *                    i64 connectedNanos, str client (≤ 100 chars: the HELLO's client, e.g. the command,
 *                    or "flight HOST:PORT" for a remote consumer served over Flight), bool ring (its batches
 *                    come through a descriptor ring), str job, i32 rank, i32 worldSize (as in its HELLO),
 *                    f64 paceShare (0 to 1: how much of the producer's last 10 s it waited for this consumer's
 *                    releases while others were attached; from 0.5 on, it sets the pace), i32 lane (0: the main
 *                    stream; k: lane k), i64 laneSamples (samples its lane loaded again for it), i64 streamEnd
 *                    (where its stream ends: a finite stream's owed tail or a resumed epoch; -1: runs on), u8 resuming
 *  11 PROGRESS     i64 epoch, i64 samples, i64 waitNanos, i64 workNanos   (consumer to producer, ~1/s)
 *  12 HEARTBEAT    (empty); producer to consumer after ~1 s with nothing else sent; the consumer answers
 *                  each with one of its own
 *  22 MOVE         i32 lane, i32 slotCount, i64 seqBase; producer to a consumer whose HELLO said lanes, in its
 *                  stream (socket or ring): its later batches come from lane `lane`, batch seq in slot
 *                  (seq - seqBase) % slotCount of the lane's arena, lane-<lane> beside the producer's arena; lane 0:
 *                  back to the main stream (slotCount the arena's), keeping every batch, with no MOVED
 *  23 MOVED        i64 position; the consumer's answer to MOVE: it gave back every batch it had not begun, and its
 *                  lane starts at this stream position
 *
 *  feeder socket of an external producer (feeder ⇄ producer):
 *  14 FEEDER_HELLO   i64 pid, str client, i32 batchSize, i64 samplesPerEpoch, i64 epochs (0 = unbounded),
 *                    str description, u16 tensorCount, then per tensor as in WELCOME, i64 datasetSize (0: the
 *                    feeder keeps its own order; above 0: it loads by index, in the order the producer sends),
 *                    bool shuffle, i64 seed, i32 lanes (lane connections it opens; 0 without datasetSize),
 *                    i64 shmReserve (shared memory its loader's workers need beside the arena)
 *  15 FEEDER_WELCOME i64 producerPid, str arenaPath, i32 claimsAhead
 *  16 CLAIM          (empty)
 *  17 SLOT           i64 seq, i64 offset (of the slot in the arena file)
 *  18 PUBLISH        i64 seq, i32 samples
 *  19 FEEDER_EPOCH_END i64 epoch, i64 samples
 *  20 ORDER          i64 epoch, i32 first, i32 total, u16 count (≤ 16000), count × i32 ids: ids first to
 *                    first + count - 1 of the epoch's order of total ids (producer to a feeder that loads by
 *                    index, in answer to ORDER_REQUEST, in as many frames as it takes)
 *  21 ORDER_REQUEST  i64 epoch (a feeder that loads by index, before each epoch)
 *  24 FEEDER_LANE    i64 pid; the first frame of one of the feeder's lane connections (after FEEDER_WELCOME)
 *  25 LANE_START     i32 lane, str arenaPath; producer to feeder on a lane connection: an ORDER of the lane's
 *                    samples follows (epoch, first 0, total), then that epoch's frames, 16 to 19, in the lane's arena
 *  26 LANE_STOP      i32 lane; producer to feeder on a lane connection: drop the lane's work; the feeder echoes it
 *                    once it holds nothing of it, and the connection waits for the next LANE_START
 *  27 RESUME         i64 epochBase, i64 handed, i64 orderKey, i32 datasetSize, i64 samplesPerEpoch, u8 shuffle,
 *                    i32 count (≤ 8000), count × i64 draws; consumer to producer before its HELLO: serve the rest
 *                    of the epoch a checkpoint was taken in (see Message.Resume), then END
 *  28 PAUSED         (empty); producer to feeder while a claim waits: no consumer is attached, the claims wait for
 *                    one; the feeder may stop loading meanwhile
 *
 *   f64 = IEEE 754 double, finite and ≥ 0; all counts and positions ≥ 0.
 * </pre>
 *
 * Version 2 added STATUS_REQ, STATUS and PROGRESS; version 3 added HEARTBEAT, HELLO's startPolicy,
 * STATUS's evictions and the feeder frames (14 to 19); version 4 added HELLO's ring, WELCOME's ring and
 * STATUS's ring per consumer (BATCH, EPOCH_END and END may then travel in a descriptor ring, see
 * {@code io.tensorsocket.rings.DescriptorRings}); version 5 added start mode 2 (exact), WELCOME's and STATUS's midEpoch, FEEDER_HELLO's
 * datasetSize, shuffle and seed, ORDER and ORDER_REQUEST; version 6 added HELLO's and STATUS's job, rank and
 * worldSize, and error code 9 (JOB_FAILED); version 7 added STATUS's paceShare per consumer; version 8 added STATUS's cache figures; version 9 added HELLO's lanes, MOVE, MOVED and STATUS's lane and
 * laneSamples per consumer; version 10 added FEEDER_HELLO's lanes, FEEDER_LANE, LANE_START and LANE_STOP; version 11
 * added RESUME, LANE_START's lane 0 (a finite stream's tail, into the producer's arena), STATUS's streamEnd and
 * resuming per consumer, STATUS's seed, and FEEDER_HELLO's shmReserve; version 12 added PAUSED. A peer of another
 * version is told VERSION_MISMATCH.
 *
 * The frames in docs/test-vectors are checked against this class and the Python client alike.
 *
 * A decoder never trusts a length: the payload length is bounded before anything is read, and every
 * count and string is checked against the bytes that are actually there.
 */
public final class WireFormat {
    public static final int MAGIC = 0x544B5354; // "TSKT" read little-endian
    public static final int VERSION = 12;
    public static final int HEADER_BYTES = 12;
    public static final int MAX_PAYLOAD = 65536;
    public static final int MAX_STRING = 4096;
    static final int MAX_TENSORS = 256;

    static final int HELLO = 1;
    static final int WELCOME = 2;
    static final int BATCH = 3;
    static final int RELEASE = 4;
    static final int EPOCH_END = 5;
    static final int END = 6;
    static final int ERROR = 7;
    static final int BYE = 8;
    static final int STATUS_REQUEST = 9;
    static final int STATUS = 10;
    static final int PROGRESS = 11;
    static final int HEARTBEAT = 12;
    static final int LAST_TYPE = HEARTBEAT;
    static final int FEEDER_HELLO = 14;
    static final int FEEDER_WELCOME = 15;
    static final int CLAIM = 16;
    static final int SLOT = 17;
    static final int PUBLISH = 18;
    static final int FEEDER_EPOCH_END = 19;
    static final int ORDER = 20;
    static final int ORDER_REQUEST = 21;
    static final int MOVE = 22;
    static final int MOVED = 23;
    static final int FEEDER_LANE = 24;
    static final int LANE_START = 25;
    static final int LANE_STOP = 26;
    static final int RESUME = 27;
    static final int PAUSED = 28;

    private WireFormat() {}

    /** Header fields of a frame, after validation. */
    public record Header(int version, int type, int payloadBytes) {}

    /**
     * Validates a frame header.
     *
     * @throws ProtocolException for a wrong magic, an oversized payload or an unknown type; a frame of
     *                           another version passes, so the caller can answer with VERSION_MISMATCH
     */
    public static Header decodeHeader(ByteBuffer b) {
        b.order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        if (magic != MAGIC) {
            throw new ProtocolException(String.format(
                    "not a TensorSocket frame (magic 0x%08x); is something other than a"
                            + " TensorSocket peer on this socket?",
                    magic));
        }
        int version = Short.toUnsignedInt(b.getShort());
        int type = Byte.toUnsignedInt(b.get());
        int reserved = Byte.toUnsignedInt(b.get());
        long len = Integer.toUnsignedLong(b.getInt());
        if (len > MAX_PAYLOAD) {
            throw new ProtocolException("frame claims a payload of " + len + " bytes; the limit is " + MAX_PAYLOAD);
        }
        if (version == VERSION && (!knownType(type) || reserved != 0)) {
            throw new ProtocolException("unknown message type " + type);
        }
        return new Header(version, type, (int) len);
    }

    private static boolean knownType(int type) {
        return (type >= HELLO && type <= LAST_TYPE) || (type >= FEEDER_HELLO && type <= PAUSED);
    }

    /** Appends the frame for {@code m} to {@code b} (which must be little-endian and large enough). */
    public static void encode(Message m, ByteBuffer b) {
        b.order(ByteOrder.LITTLE_ENDIAN);
        int start = b.position();
        b.putInt(MAGIC)
                .putShort((short) VERSION)
                .put((byte) typeOf(m))
                .put((byte) 0)
                .putInt(0);
        int payloadStart = b.position();
        switch (m) {
            case Message.Hello h -> {
                b.putInt(h.batchSize()).put(bool(h.dropLast())).putLong(h.pid());
                putString(b, h.client());
                b.put((byte) h.startPolicy().ordinal()).put(bool(h.ring()));
                putString(b, h.job());
                b.putInt(h.rank()).putInt(h.worldSize()).put(bool(h.lanes()));
            }
            case Message.Welcome w -> {
                b.putLong(w.sessionId()).putInt(w.consumerId()).putLong(w.producerPid());
                putString(b, w.arenaPath());
                b.putInt(w.slotCount())
                        .putLong(w.slotBytes())
                        .putInt(w.producerBatchSize())
                        .putLong(w.samplesPerEpoch())
                        .putLong(w.epochs())
                        .put((byte) w.startMode().ordinal())
                        .putLong(w.startEpoch())
                        .putLong(w.startSample());
                putString(b, w.source());
                putTensors(b, w.tensors());
                b.putInt(w.ring()).put((byte) w.midEpoch().ordinal());
            }
            case Message.BatchReady r ->
                b.putLong(r.seq())
                        .putInt(r.slot())
                        .putLong(r.epoch())
                        .putLong(r.index())
                        .putLong(r.sampleStart())
                        .putInt(r.samples());
            case Message.Release r -> b.putLong(r.seq());
            case Message.EpochEnd e -> b.putLong(e.epoch()).putLong(e.batches()).putLong(e.samples());
            case Message.EndOfStream e -> b.putLong(e.epochs());
            case Message.Error e -> {
                b.putInt(e.code().code());
                putString(b, truncate(e.message()));
            }
            case Message.Bye ignored -> {}
            case Message.StatusRequest ignored -> {}
            case Message.Status st -> StatusCodec.encode(st.status(), b);
            case Message.Progress pr ->
                b.putLong(pr.epoch())
                        .putLong(pr.samples())
                        .putLong(pr.waitNanos())
                        .putLong(pr.workNanos());
            case Message.Heartbeat ignored -> {}
            case Message.FeederHello h -> {
                b.putLong(h.pid());
                putString(b, h.client());
                b.putInt(h.batchSize()).putLong(h.samplesPerEpoch()).putLong(h.epochs());
                putString(b, h.description());
                putTensors(b, h.tensors());
                b.putLong(h.datasetSize())
                        .put(bool(h.shuffle()))
                        .putLong(h.seed())
                        .putInt(h.lanes())
                        .putLong(h.shmReserve());
            }
            case Message.FeederWelcome w -> {
                b.putLong(w.producerPid());
                putString(b, w.arenaPath());
                b.putInt(w.claimsAhead());
            }
            case Message.Claim ignored -> {}
            case Message.Paused ignored -> {}
            case Message.SlotGrant g -> b.putLong(g.seq()).putLong(g.offset());
            case Message.Publish pu -> b.putLong(pu.seq()).putInt(pu.samples());
            case Message.FeederEpochEnd e -> b.putLong(e.epoch()).putLong(e.samples());
            case Message.OrderRequest o -> b.putLong(o.epoch());
            case Message.Move mv -> b.putInt(mv.lane()).putInt(mv.slotCount()).putLong(mv.seqBase());
            case Message.Moved mv -> b.putLong(mv.position());
            case Message.FeederLaneHello l -> b.putLong(l.pid());
            case Message.LaneStart l -> {
                b.putInt(l.lane());
                putString(b, l.arenaPath());
            }
            case Message.LaneStop l -> b.putInt(l.lane());
            case Message.Resume r -> {
                b.putLong(r.epochBase())
                        .putLong(r.handed())
                        .putLong(r.orderKey())
                        .putInt(r.datasetSize());
                b.putLong(r.samplesPerEpoch()).put(bool(r.shuffle())).putInt(r.draws().length);
                for (long d : r.draws()) {
                    b.putLong(d);
                }
            }
            case Message.EpochOrder o -> {
                b.putLong(o.epoch()).putInt(o.first()).putInt(o.total()).putShort((short) o.ids().length);
                for (int id : o.ids()) {
                    b.putInt(id);
                }
            }
        }
        b.putInt(start + 8, b.position() - payloadStart);
    }

    /** The encoded frame of {@code m}, in a new buffer ready to be written. */
    public static ByteBuffer encode(Message m) {
        ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + MAX_PAYLOAD).order(ByteOrder.LITTLE_ENDIAN);
        encode(m, b);
        return b.flip();
    }

    /**
     * Decodes a payload of the current version.
     *
     * @throws ProtocolException if the payload is truncated, has trailing bytes, or holds an invalid value
     */
    public static Message decodePayload(int type, ByteBuffer p) {
        p.order(ByteOrder.LITTLE_ENDIAN);
        try {
            Message m = switch (type) {
                case HELLO ->
                    new Message.Hello(
                            p.getInt(),
                            getBool(p),
                            p.getLong(),
                            getString(p),
                            startPolicy(p.get()),
                            getBool(p),
                            getString(p),
                            p.getInt(),
                            p.getInt(),
                            getBool(p));
                case WELCOME -> decodeWelcome(p);
                case BATCH ->
                    new Message.BatchReady(p.getLong(), p.getInt(), p.getLong(), p.getLong(), p.getLong(), p.getInt());
                case RELEASE -> new Message.Release(p.getLong());
                case EPOCH_END -> new Message.EpochEnd(p.getLong(), p.getLong(), p.getLong());
                case END -> new Message.EndOfStream(p.getLong());
                case ERROR -> new Message.Error(Message.ErrorCode.fromCode(p.getInt()), getString(p));
                case BYE -> new Message.Bye();
                case STATUS_REQUEST -> new Message.StatusRequest();
                case STATUS -> new Message.Status(StatusCodec.decode(p));
                case PROGRESS -> decodeProgress(p);
                case HEARTBEAT -> new Message.Heartbeat();
                case FEEDER_HELLO -> decodeFeederHello(p);
                case FEEDER_WELCOME ->
                    new Message.FeederWelcome(nonNegative(p.getLong()), getString(p), positive(p.getInt()));
                case CLAIM -> new Message.Claim();
                case SLOT -> new Message.SlotGrant(nonNegative(p.getLong()), nonNegative(p.getLong()));
                case PUBLISH -> new Message.Publish(nonNegative(p.getLong()), p.getInt());
                case FEEDER_EPOCH_END -> new Message.FeederEpochEnd(nonNegative(p.getLong()), nonNegative(p.getLong()));
                case ORDER -> decodeOrder(p);
                case ORDER_REQUEST -> new Message.OrderRequest(nonNegative(p.getLong()));
                case MOVE -> new Message.Move(nonNegative(p.getInt()), positive(p.getInt()), nonNegative(p.getLong()));
                case MOVED -> new Message.Moved(nonNegative(p.getLong()));
                case FEEDER_LANE -> new Message.FeederLaneHello(nonNegative(p.getLong()));
                case LANE_START -> new Message.LaneStart(nonNegative(p.getInt()), getString(p));
                case LANE_STOP -> new Message.LaneStop(nonNegative(p.getInt()));
                case RESUME -> decodeResume(p);
                case PAUSED -> new Message.Paused();
                default -> throw new ProtocolException("unknown message type " + type);
            };
            if (p.hasRemaining()) {
                throw new ProtocolException(
                        "message type " + type + " has " + p.remaining() + " unexpected trailing bytes");
            }
            return m;
        } catch (BufferUnderflowException e) {
            throw new ProtocolException("message type " + type + " is truncated");
        }
    }

    /** Decodes an ERROR payload of any version (its form never changes), or null if it is not one. */
    public static Message.Error decodeAnyVersionError(int type, ByteBuffer p) {
        if (type != ERROR) {
            return null;
        }
        try {
            p.order(ByteOrder.LITTLE_ENDIAN);
            return new Message.Error(Message.ErrorCode.fromCode(p.getInt()), getString(p));
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static Message.Welcome decodeWelcome(ByteBuffer p) {
        long session = p.getLong();
        int consumerId = p.getInt();
        long pid = p.getLong();
        String arena = getString(p);
        int slotCount = p.getInt();
        long slotBytes = p.getLong();
        int batchSize = p.getInt();
        long samples = p.getLong();
        long epochs = p.getLong();
        int mode = Byte.toUnsignedInt(p.get());
        long startEpoch = p.getLong();
        long startSample = p.getLong();
        String source = getString(p);
        int count = Short.toUnsignedInt(p.getShort());
        if (slotCount < 1
                || slotBytes < 1
                || batchSize < 1
                || samples < 0
                || epochs < 0
                || startEpoch < 0
                || startSample < 0
                || mode > 2
                || count < 1
                || count > MAX_TENSORS) {
            throw new ProtocolException("WELCOME holds an invalid value");
        }
        List<TensorSpec> tensors = getTensors(p, count, "WELCOME");
        int ring = p.getInt();
        int midEpoch = Byte.toUnsignedInt(p.get());
        if (ring < Message.Welcome.NO_RING || midEpoch < 1 || midEpoch > 2) {
            throw new ProtocolException("WELCOME holds an invalid value");
        }
        return new Message.Welcome(
                session,
                consumerId,
                pid,
                arena,
                slotCount,
                slotBytes,
                batchSize,
                tensors,
                samples,
                epochs,
                StartMode.values()[mode],
                startEpoch,
                startSample,
                source,
                ring,
                StartMode.values()[midEpoch]);
    }

    private static Message.FeederHello decodeFeederHello(ByteBuffer p) {
        long pid = nonNegative(p.getLong());
        String client = getString(p);
        int batchSize = p.getInt();
        long samples = p.getLong();
        long epochs = p.getLong();
        String description = getString(p);
        int count = Short.toUnsignedInt(p.getShort());
        if (count > MAX_TENSORS) {
            throw new ProtocolException("FEEDER_HELLO declares " + count + " tensors; the limit is " + MAX_TENSORS);
        }
        // Sizes are the feeder's declaration: the producer judges them and says what is wrong with them.
        List<TensorSpec> tensors = getTensors(p, count, "FEEDER_HELLO");
        return new Message.FeederHello(
                pid,
                client,
                batchSize,
                samples,
                epochs,
                description,
                tensors,
                p.getLong(),
                getBool(p),
                p.getLong(),
                nonNegative(p.getInt()),
                nonNegative(p.getLong()));
    }

    private static Message.Resume decodeResume(ByteBuffer p) {
        long epochBase = nonNegative(p.getLong());
        long handed = nonNegative(p.getLong());
        long orderKey = p.getLong();
        int datasetSize = positive(p.getInt());
        long samplesPerEpoch = nonNegative(p.getLong());
        boolean shuffle = getBool(p);
        int n = nonNegative(p.getInt());
        if (n > Message.Resume.MAX_DRAWS || n * 8L > p.remaining()) {
            throw new ProtocolException("a RESUME of " + n + " draw values");
        }
        long[] draws = new long[n];
        for (int i = 0; i < n; i++) {
            draws[i] = nonNegative(p.getLong());
        }
        return new Message.Resume(epochBase, handed, orderKey, datasetSize, samplesPerEpoch, shuffle, draws);
    }

    private static Message.EpochOrder decodeOrder(ByteBuffer p) {
        long epoch = nonNegative(p.getLong());
        int first = p.getInt();
        int total = p.getInt();
        int count = Short.toUnsignedInt(p.getShort());
        if (first < 0 || total < 1 || count > Message.EpochOrder.MAX_IDS || count > total - first) {
            throw new ProtocolException("ORDER holds ids " + first + " to " + (first + count - 1) + " of " + total);
        }
        int[] ids = new int[count];
        for (int i = 0; i < count; i++) {
            ids[i] = p.getInt();
            if (ids[i] < 0) {
                throw new ProtocolException("ORDER holds id " + ids[i]);
            }
        }
        return new Message.EpochOrder(epoch, first, total, ids);
    }

    private static Message.Progress decodeProgress(ByteBuffer p) {
        return new Message.Progress(
                nonNegative(p.getLong()), nonNegative(p.getLong()), nonNegative(p.getLong()), nonNegative(p.getLong()));
    }

    private static int typeOf(Message m) {
        return switch (m) {
            case Message.Hello h -> HELLO;
            case Message.Welcome w -> WELCOME;
            case Message.BatchReady r -> BATCH;
            case Message.Release r -> RELEASE;
            case Message.EpochEnd e -> EPOCH_END;
            case Message.EndOfStream e -> END;
            case Message.Error e -> ERROR;
            case Message.Bye b -> BYE;
            case Message.StatusRequest r -> STATUS_REQUEST;
            case Message.Status st -> STATUS;
            case Message.Progress pr -> PROGRESS;
            case Message.Heartbeat hb -> HEARTBEAT;
            case Message.FeederHello h -> FEEDER_HELLO;
            case Message.FeederWelcome w -> FEEDER_WELCOME;
            case Message.Claim c -> CLAIM;
            case Message.SlotGrant g -> SLOT;
            case Message.Publish pu -> PUBLISH;
            case Message.FeederEpochEnd e -> FEEDER_EPOCH_END;
            case Message.EpochOrder o -> ORDER;
            case Message.OrderRequest o -> ORDER_REQUEST;
            case Message.Move mv -> MOVE;
            case Message.Moved mv -> MOVED;
            case Message.FeederLaneHello l -> FEEDER_LANE;
            case Message.LaneStart l -> LANE_START;
            case Message.LaneStop l -> LANE_STOP;
            case Message.Resume r -> RESUME;
            case Message.Paused pa -> PAUSED;
        };
    }
}
