"""The control protocol's frames, as specified in docs/PROTOCOL.md. Every integer is little-endian.

A decoder never trusts a length: the payload length is bounded before anything is read, and every
count and string is checked against the bytes that are actually there.
"""

import struct
from dataclasses import dataclass
from typing import Optional, Tuple

from . import stream
from .dtypes import DTYPES
from .errors import ProtocolError, ProtocolVersionError

MAGIC = 0x544B5354  # "TSKT" read little-endian
VERSION = 12
HEADER_BYTES = 12
MAX_PAYLOAD = 65536
MAX_STRING = 4096
MAX_TENSORS = 256
MAX_RANK = 16

HELLO, WELCOME, BATCH, RELEASE, EPOCH_END, END, ERROR, BYE, STATUS_REQUEST, STATUS, PROGRESS, HEARTBEAT = range(1, 13)
# The feeder socket of an external producer.
FEEDER_HELLO, FEEDER_WELCOME, CLAIM, SLOT, PUBLISH, FEEDER_EPOCH_END, ORDER, ORDER_REQUEST = range(14, 22)
MAX_ORDER_IDS = 16000  # ids in one ORDER frame
# A consumer's move to a lane of its own when it falls behind, and its answer.
MOVE, MOVED = 22, 23
# A feeder's lane connections: where it loads the batches of the producer's lanes.
FEEDER_LANE, LANE_START, LANE_STOP = 24, 25, 26
RESUME = 27
PAUSED = 28  # producer to feeder while a claim waits: no consumer is attached
MAX_RESUME_DRAWS = 8000  # longs in one RESUME's draws

# ERROR codes: wire values that never change.
(VERSION_MISMATCH, BAD_FRAME, BAD_REQUEST, EVICTED, LOADER_FAILED, PRODUCER_CLOSED, INTERNAL, STOPPED,
 JOB_FAILED) = range(1, 10)
ERROR_NAMES = {VERSION_MISMATCH: "VERSION_MISMATCH", BAD_FRAME: "BAD_FRAME", BAD_REQUEST: "BAD_REQUEST",
               EVICTED: "EVICTED", LOADER_FAILED: "LOADER_FAILED", PRODUCER_CLOSED: "PRODUCER_CLOSED",
               INTERNAL: "INTERNAL", STOPPED: "STOPPED", JOB_FAILED: "JOB_FAILED"}

# Start modes on the wire; their names are the stream model's (stream.EPOCH_START, ROLLING, EXACT), written once there.
START_EPOCH, START_ROLLING, START_EXACT = 0, 1, 2
START_LABELS = {START_EPOCH: stream.EPOCH_START, START_ROLLING: stream.ROLLING, START_EXACT: stream.EXACT}
# HELLO's start policy: join at once (rolling if too late for the epoch start), or wait for the next epoch start.
JOIN_NOW, NEXT_EPOCH_START = 0, 1

_HEADER = struct.Struct("<IHBBI")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: int  # wire code, see dtypes.DTYPES
    shape: Tuple[int, ...]  # per-sample shape


@dataclass(frozen=True)
class Hello:
    batch_size: int
    drop_last: bool
    pid: int
    client: str
    start_policy: int = JOIN_NOW
    # Ask to be handed the stream through a descriptor ring in shared memory (else over the socket).
    ring: bool = False
    # A rank of a data-parallel job: its name ("": none), this consumer's rank and the job's world size.
    job: str = ""
    rank: int = 0
    world_size: int = 1
    # It can be moved to a lane of its own when it falls behind (MOVE).
    lanes: bool = False


@dataclass(frozen=True)
class Heartbeat:
    """Producer to consumer after a second with nothing else sent; the consumer answers with one."""


@dataclass(frozen=True)
class Welcome:
    session_id: int
    consumer_id: int
    producer_pid: int
    arena_path: str
    slot_count: int
    slot_bytes: int
    producer_batch_size: int
    samples_per_epoch: int
    epochs: int
    start_mode: int
    start_epoch: int
    start_sample: int
    source: str
    tensors: Tuple[TensorSpec, ...]
    ring: int = -1  # the consumer's descriptor ring, -1: its stream comes over the socket
    mid_epoch: int = START_ROLLING  # how any consumer joining mid-epoch starts: START_ROLLING or START_EXACT


@dataclass(frozen=True)
class BatchReady:
    seq: int
    slot: int
    epoch: int
    index: int
    sample_start: int
    samples: int


@dataclass(frozen=True)
class Release:
    seq: int


@dataclass(frozen=True)
class EpochEnd:
    epoch: int
    batches: int
    samples: int


@dataclass(frozen=True)
class EndOfStream:
    epochs: int


@dataclass(frozen=True)
class Error:
    code: int
    message: str


@dataclass(frozen=True)
class Bye:
    pass


@dataclass(frozen=True)
class StatusRequest:
    pass


@dataclass(frozen=True)
class Progress:
    epoch: int
    samples: int
    wait_nanos: int
    work_nanos: int


# STATUS's producer states, in wire order.
STATES = ("waiting for consumers", "serving", "draining", "closing")
MAX_LISTED = 256


@dataclass(frozen=True)
class ConsumerStatus:
    """One attached consumer in a producer's STATUS."""
    id: int
    pid: int
    user: str
    batch_size: int
    drop_last: bool
    start_mode: int
    epoch: int
    position: int
    lag_samples: int
    batches_held: int
    batches_sent: int
    reported: bool
    samples_consumed: int
    samples_per_second: float
    wait_nanos: int
    work_nanos: int
    connected_nanos: int
    client: str
    ring: bool
    job: str = ""
    rank: int = 0
    world_size: int = 1
    pace_share: float = 0.0  # of the producer's last 10 s, waiting for this one's releases; >= 0.5: it sets the pace
    lane: int = 0  # 0: the main stream; k: lane k serves it
    lane_samples: int = 0  # samples its lane loaded again for it
    stream_end: int = -1  # where its stream ends (a finite stream's owed tail, a resumed epoch); -1: it runs on
    resuming: bool = False  # served the rest of an epoch it resumes from a checkpoint


@dataclass(frozen=True)
class CacheStatus:
    """A producer's source's decoded-sample cache (all 0 without one): what it keeps, and the loads since the start
    that found their sample kept (hits) or decoded it (loads)."""
    capacity_bytes: int = 0
    bytes_held: int = 0
    samples_held: int = 0
    samples: int = 0
    hits: int = 0
    loads: int = 0


@dataclass(frozen=True)
class Status:
    """A producer's snapshot of itself and its consumers: the answer to STATUS_REQUEST."""
    producer_pid: int
    name: str
    source: str
    state: int  # index into STATES
    producer_batch_size: int
    samples_per_epoch: int
    epochs: int
    epoch: int
    sample: int
    batches_published: int
    samples_published: int
    samples_per_second: float
    slot_count: int
    slot_bytes: int
    slots_in_use: int
    rubber_band: int
    window_batches: int
    uptime_nanos: int
    consumers_attached: int
    evictions: int
    mid_epoch: int  # how a consumer joining mid-epoch starts: START_ROLLING or START_EXACT
    cache: CacheStatus
    consumers: Tuple[ConsumerStatus, ...]
    seed: Optional[int] = None  # the seed of its shuffles, where its source says


# ---- the feeder socket of an external producer (feeder ⇄ producer)

@dataclass(frozen=True)
class FeederHello:
    """Feeder to producer: the batches it will write."""
    pid: int
    client: str
    batch_size: int
    samples_per_epoch: int
    epochs: int  # 0: until the feeder stops
    description: str
    tensors: Tuple[TensorSpec, ...]
    # A feeder that loads by index declares its data set's size (0: it keeps its own order), shuffle and seed;
    # the producer then sends each epoch's order (EpochOrder) before the epoch's first SLOT.
    dataset_size: int = 0
    shuffle: bool = False
    seed: int = 0
    # Lane connections it opens once welcomed (only with a data set loaded by index).
    lanes: int = 0
    # Shared memory its loader's workers need beside the arena (workers x prefetch x batch bytes).
    shm_reserve: int = 0


@dataclass(frozen=True)
class FeederLaneHello:
    """Feeder to producer, the first frame of a lane connection: the attached feeder of pid ``pid``."""
    pid: int


@dataclass(frozen=True)
class LaneStart:
    """Producer to feeder on a lane connection: load lane ``lane``'s samples (an EpochOrder follows) into
    ``arena_path``; lane 0 is a finite stream's tail, into the producer's own arena."""
    lane: int
    arena_path: str


@dataclass(frozen=True)
class Resume:
    """Consumer to producer, before its HELLO: continue my epoch from a checkpoint (see the Java Message.Resume): it
    begins at stream position ``epoch_base``, ``handed`` samples of its share were read, under the orders of a source
    of ``order_key``, ``dataset_size``, ``samples_per_epoch`` and ``shuffle`` drawn over ``draws`` (epoch, boundary
    count, boundaries, ...)."""
    epoch_base: int
    handed: int
    order_key: int
    dataset_size: int
    samples_per_epoch: int
    shuffle: bool
    draws: tuple


@dataclass(frozen=True)
class LaneStop:
    """Producer to feeder on a lane connection: drop lane ``lane``'s work; the feeder echoes it once it has."""
    lane: int


@dataclass(frozen=True)
class Move:
    """Producer to a consumer whose HELLO said lanes: its later batches come from lane ``lane`` (arena lane-<lane>)."""
    lane: int
    slot_count: int
    seq_base: int


@dataclass(frozen=True)
class Moved:
    """A consumer's answer to Move: its lane starts at this stream position."""
    position: int


@dataclass(frozen=True)
class Paused:
    """Producer to feeder while a claim waits: no consumer is attached (they read and left); the claims wait for one.
    The feeder may stop loading meanwhile."""


@dataclass(frozen=True)
class OrderRequest:
    """A feeder that loads by index to the producer, before each epoch: send epoch ``epoch``'s order."""
    epoch: int


@dataclass(frozen=True)
class EpochOrder:
    """Producer to a feeder that loads by index, answering OrderRequest: ids ``first`` .. ``first + len(ids) - 1`` of
    epoch ``epoch``'s
    order of ``total`` ids."""
    epoch: int
    first: int
    total: int
    ids: Tuple[int, ...]


@dataclass(frozen=True)
class FeederWelcome:
    producer_pid: int
    arena_path: str
    claims_ahead: int


@dataclass(frozen=True)
class Claim:
    """Feeder to producer: asks for a slot to fill with the next batch."""


@dataclass(frozen=True)
class SlotGrant:
    """Producer to feeder: batch ``seq`` goes into the slot at ``offset`` of the arena file."""
    seq: int
    offset: int


@dataclass(frozen=True)
class Publish:
    seq: int
    samples: int


@dataclass(frozen=True)
class FeederEpochEnd:
    epoch: int
    samples: int


_TYPES = {Hello: HELLO, Welcome: WELCOME, BatchReady: BATCH, Release: RELEASE, EpochEnd: EPOCH_END,
          EndOfStream: END, Error: ERROR, Bye: BYE, StatusRequest: STATUS_REQUEST, Status: STATUS, Progress: PROGRESS,
          Heartbeat: HEARTBEAT, FeederHello: FEEDER_HELLO, FeederWelcome: FEEDER_WELCOME, Claim: CLAIM, SlotGrant: SLOT,
          Publish: PUBLISH, FeederEpochEnd: FEEDER_EPOCH_END, EpochOrder: ORDER,
          OrderRequest: ORDER_REQUEST, Move: MOVE, Moved: MOVED,
          FeederLaneHello: FEEDER_LANE, LaneStart: LANE_START, LaneStop: LANE_STOP, Resume: RESUME,
          Paused: PAUSED}


# ------------------------------------------------------------------------------------------ encoding

def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    if len(b) > MAX_STRING:
        raise ValueError("string of %d bytes exceeds the protocol's %d" % (len(b), MAX_STRING))
    return struct.pack("<H", len(b)) + b


def _tensors(tensors) -> bytes:
    p = struct.pack("<H", len(tensors))
    for ts in tensors:
        p += _string(ts.name) + struct.pack("<BB", ts.dtype, len(ts.shape))
        p += b"".join(struct.pack("<q", d) for d in ts.shape)
    return p


def _truncate(s: str) -> str:
    return s[:MAX_STRING // 4]


def _encode_status(m) -> bytes:
    p = struct.pack("<q", m.producer_pid) + _string(_truncate(m.name)) + _string(_truncate(m.source))
    p += struct.pack("<Biqqqqqqdiqiiiqiq", m.state, m.producer_batch_size, m.samples_per_epoch, m.epochs, m.epoch,
                     m.sample, m.batches_published, m.samples_published, m.samples_per_second, m.slot_count,
                     m.slot_bytes, m.slots_in_use, m.rubber_band, m.window_batches, m.uptime_nanos,
                     m.consumers_attached, m.evictions)
    p += struct.pack("<B", m.mid_epoch)
    k = m.cache
    p += struct.pack("<qqqqqq", k.capacity_bytes, k.bytes_held, k.samples_held, k.samples, k.hits, k.loads)
    listed = m.consumers[:MAX_LISTED]
    p += struct.pack("<H", len(listed))
    for c in listed:
        p += struct.pack("<iq", c.id, c.pid) + _string(c.user[:64])
        p += struct.pack("<iBBqqqiqBqdqqq", c.batch_size, c.drop_last, c.start_mode, c.epoch, c.position,
                         c.lag_samples, c.batches_held, c.batches_sent, c.reported, c.samples_consumed,
                         c.samples_per_second, c.wait_nanos, c.work_nanos, c.connected_nanos)
        p += _string(c.client) + struct.pack("<B", c.ring)
        p += _string(c.job) + struct.pack("<iidiqqB", c.rank, c.world_size, c.pace_share, c.lane, c.lane_samples,
                                          c.stream_end, 1 if c.resuming else 0)
    p += struct.pack("<Bq", 0 if m.seed is None else 1, m.seed or 0)
    return p


def encode(m) -> bytes:
    """The frame of message ``m``."""
    t = _TYPES[type(m)]
    if t == HELLO:
        p = (struct.pack("<iBq", m.batch_size, 1 if m.drop_last else 0, m.pid) + _string(m.client)
             + struct.pack("<BB", m.start_policy, 1 if m.ring else 0) + _string(m.job)
             + struct.pack("<iiB", m.rank, m.world_size, 1 if m.lanes else 0))
    elif t == WELCOME:
        p = struct.pack("<qiq", m.session_id, m.consumer_id, m.producer_pid) + _string(m.arena_path)
        p += struct.pack("<iqiqqBqq", m.slot_count, m.slot_bytes, m.producer_batch_size, m.samples_per_epoch,
                         m.epochs, m.start_mode, m.start_epoch, m.start_sample)
        p += _string(m.source) + _tensors(m.tensors) + struct.pack("<iB", m.ring, m.mid_epoch)
    elif t == BATCH:
        p = struct.pack("<qiqqqi", m.seq, m.slot, m.epoch, m.index, m.sample_start, m.samples)
    elif t == RELEASE:
        p = struct.pack("<q", m.seq)
    elif t == EPOCH_END:
        p = struct.pack("<qqq", m.epoch, m.batches, m.samples)
    elif t == END:
        p = struct.pack("<q", m.epochs)
    elif t == ERROR:
        p = struct.pack("<i", m.code) + _string(m.message[:MAX_STRING // 4])
    elif t == PROGRESS:
        p = struct.pack("<qqqq", m.epoch, m.samples, m.wait_nanos, m.work_nanos)
    elif t == STATUS:
        p = _encode_status(m)
    elif t == FEEDER_HELLO:
        p = struct.pack("<q", m.pid) + _string(m.client) + struct.pack("<iqq", m.batch_size, m.samples_per_epoch,
                                                                        m.epochs)
        p += _string(m.description) + _tensors(m.tensors)
        p += struct.pack("<qBqiq", m.dataset_size, 1 if m.shuffle else 0, m.seed, m.lanes, m.shm_reserve)
    elif t == FEEDER_LANE:
        p = struct.pack("<q", m.pid)
    elif t == LANE_START:
        p = struct.pack("<i", m.lane) + _string(m.arena_path)
    elif t == LANE_STOP:
        p = struct.pack("<i", m.lane)
    elif t == RESUME:
        p = struct.pack("<qqqiqBi", m.epoch_base, m.handed, m.order_key, m.dataset_size, m.samples_per_epoch,
                        1 if m.shuffle else 0, len(m.draws)) + struct.pack("<%dq" % len(m.draws), *m.draws)
    elif t == ORDER_REQUEST:
        p = struct.pack("<q", m.epoch)
    elif t == MOVE:
        p = struct.pack("<iiq", m.lane, m.slot_count, m.seq_base)
    elif t == MOVED:
        p = struct.pack("<q", m.position)
    elif t == ORDER:
        p = struct.pack("<qiiH", m.epoch, m.first, m.total, len(m.ids)) + struct.pack("<%di" % len(m.ids), *m.ids)
    elif t == FEEDER_WELCOME:
        p = struct.pack("<q", m.producer_pid) + _string(m.arena_path) + struct.pack("<i", m.claims_ahead)
    elif t == SLOT:
        p = struct.pack("<qq", m.seq, m.offset)
    elif t == PUBLISH:
        p = struct.pack("<qi", m.seq, m.samples)
    elif t == FEEDER_EPOCH_END:
        p = struct.pack("<qq", m.epoch, m.samples)
    else:
        p = b""
    return _HEADER.pack(MAGIC, VERSION, t, 0, len(p)) + p


# ------------------------------------------------------------------------------------------ decoding

def decode_header(b: bytes):
    """Validates a 12-byte frame header; returns (version, type, payload_bytes).

    A frame of another version passes, so the caller can report the mismatch (or read its ERROR).
    """
    magic, version, mtype, reserved, length = _HEADER.unpack(b)
    if magic != MAGIC:
        raise ProtocolError("not a TensorSocket frame (magic 0x%08x); is something other than a TensorSocket "
                            "peer on this socket?" % magic)
    if length > MAX_PAYLOAD:
        raise ProtocolError("frame claims a payload of %d bytes; the limit is %d" % (length, MAX_PAYLOAD))
    known = HELLO <= mtype <= HEARTBEAT or FEEDER_HELLO <= mtype <= PAUSED
    if version == VERSION and (not known or reserved != 0):
        raise ProtocolError("unknown message type %d" % mtype)
    return version, mtype, length


class _Reader:
    __slots__ = ("b", "pos", "mtype")

    def __init__(self, b, mtype):
        self.b = b
        self.pos = 0
        self.mtype = mtype

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.b):
            raise ProtocolError("message type %d is truncated" % self.mtype)
        v = struct.unpack_from(fmt, self.b, self.pos)
        self.pos += size
        return v if len(v) > 1 else v[0]

    def bool(self):
        v = self.take("<B")
        if v > 1:
            raise ProtocolError("boolean field holds %d" % v)
        return v == 1

    def string(self):
        n = self.take("<H")
        remaining = len(self.b) - self.pos
        if n > MAX_STRING or n > remaining:
            raise ProtocolError("string of %d bytes where %d are allowed" % (n, min(remaining, MAX_STRING)))
        raw = bytes(self.b[self.pos:self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("string is not valid UTF-8") from None


def decode_payload(mtype: int, payload: bytes):
    """Decodes a payload of the current version; raises ProtocolError if it is truncated, has trailing
    bytes or holds an invalid value."""
    r = _Reader(payload, mtype)
    if mtype == HELLO:
        batch, drop = r.take("<i"), r.bool()
        pid, client, policy = r.take("<q"), r.string(), r.take("<B")
        if policy > NEXT_EPOCH_START:
            raise ProtocolError("HELLO holds unknown start policy %d" % policy)
        ring = r.bool()
        job = r.string()
        rank, world = r.take("<ii")
        m = Hello(batch, drop, pid, client, policy, ring, job, rank, world, r.bool())
    elif mtype == WELCOME:
        m = _decode_welcome(r)
    elif mtype == BATCH:
        m = BatchReady(*r.take("<qiqqqi"))
    elif mtype == RELEASE:
        m = Release(r.take("<q"))
    elif mtype == EPOCH_END:
        m = EpochEnd(*r.take("<qqq"))
    elif mtype == END:
        m = EndOfStream(r.take("<q"))
    elif mtype == ERROR:
        m = Error(r.take("<i"), r.string())
    elif mtype == BYE:
        m = Bye()
    elif mtype == STATUS_REQUEST:
        m = StatusRequest()
    elif mtype == HEARTBEAT:
        m = Heartbeat()
    elif mtype == PROGRESS:
        m = Progress(*r.take("<qqqq"))
        if min(m.epoch, m.samples, m.wait_nanos, m.work_nanos) < 0:
            raise ProtocolError("PROGRESS holds a negative count")
    elif mtype == STATUS:
        m = _decode_status(r)
    elif mtype == FEEDER_HELLO:
        pid, client = _non_negative(r.take("<q")), r.string()
        batch, samples, epochs = r.take("<iqq")
        description = r.string()
        # Sizes are the feeder's declaration: the producer judges them and says what is wrong with them.
        tensors = _decode_tensors(r, "FEEDER_HELLO", False)
        dataset_size = r.take("<q")
        shuffle = r.bool()
        seed = r.take("<q")
        lanes = _non_negative(r.take("<i"))
        m = FeederHello(pid, client, batch, samples, epochs, description, tensors, dataset_size, shuffle, seed,
                        lanes, _non_negative(r.take("<q")))
    elif mtype == FEEDER_LANE:
        m = FeederLaneHello(_non_negative(r.take("<q")))
    elif mtype == LANE_START:
        m = LaneStart(_non_negative(r.take("<i")), r.string())
    elif mtype == LANE_STOP:
        m = LaneStop(_non_negative(r.take("<i")))
    elif mtype == RESUME:
        base, handed, key, size, spe, shuffle, n = r.take("<qqqiqBi")
        if n < 0 or n > MAX_RESUME_DRAWS:
            raise ProtocolError("a RESUME of %d draw values" % n)
        draws = r.take("<%dq" % n) if n else ()
        draws = draws if isinstance(draws, tuple) else (draws,)
        m = Resume(_non_negative(base), _non_negative(handed), key, _positive(size), _non_negative(spe), shuffle == 1,
                   tuple(_non_negative(d) for d in draws))
    elif mtype == ORDER_REQUEST:
        m = OrderRequest(_non_negative(r.take("<q")))
    elif mtype == MOVE:
        lane, slots = r.take("<ii")
        lane, slots = _non_negative(lane), _positive(slots)
        m = Move(lane, slots, _non_negative(r.take("<q")))
    elif mtype == MOVED:
        m = Moved(_non_negative(r.take("<q")))
    elif mtype == ORDER:
        epoch, first, total, count = r.take("<qiiH")
        if epoch < 0 or first < 0 or total < 1 or count > MAX_ORDER_IDS or count > total - first:
            raise ProtocolError("ORDER holds ids %d to %d of %d" % (first, first + count - 1, total))
        ids = r.take("<%di" % count) if count else ()
        ids = ids if isinstance(ids, tuple) else (ids,)
        if any(i < 0 for i in ids):
            raise ProtocolError("ORDER holds a negative id")
        m = EpochOrder(epoch, first, total, ids)
    elif mtype == FEEDER_WELCOME:
        pid, arena, claims = _non_negative(r.take("<q")), r.string(), r.take("<i")
        if claims < 1:
            raise ProtocolError("FEEDER_WELCOME holds %d claims ahead" % claims)
        m = FeederWelcome(pid, arena, claims)
    elif mtype == CLAIM:
        m = Claim()
    elif mtype == PAUSED:
        m = Paused()
    elif mtype == SLOT:
        m = SlotGrant(*(_non_negative(v) for v in r.take("<qq")))
    elif mtype == PUBLISH:
        seq, samples = r.take("<qi")
        m = Publish(_non_negative(seq), samples)
    elif mtype == FEEDER_EPOCH_END:
        m = FeederEpochEnd(*(_non_negative(v) for v in r.take("<qq")))
    else:
        raise ProtocolError("unknown message type %d" % mtype)
    if r.pos != len(payload):
        raise ProtocolError("message type %d has %d unexpected trailing bytes" % (mtype, len(payload) - r.pos))
    return m


def decode_any_version_error(mtype: int, payload: bytes):
    """An ERROR payload of any version (its form never changes), or None if it is not one."""
    if mtype != ERROR:
        return None
    try:
        r = _Reader(payload, mtype)
        return Error(r.take("<i"), r.string())
    except ProtocolError:
        return None


def _non_negative(v):
    if v < 0:
        raise ProtocolError("a count or position holds %d" % v)
    return v


def _positive(v):
    if v < 1:
        raise ProtocolError("a size holds %d" % v)
    return v


def _rate(v):
    if not (v >= 0 and v != float("inf")):
        raise ProtocolError("a rate holds %r" % v)
    return v


def _decode_tensors(r, frame, at_least_one=True):
    count = r.take("<H")
    if count > MAX_TENSORS or (at_least_one and count < 1):
        raise ProtocolError("%s holds an invalid value" % frame)
    tensors = []
    for _ in range(count):
        name = r.string()
        dtype, rank = r.take("<BB")
        if rank > MAX_RANK:
            raise ProtocolError("%s tensor '%s' has rank %d" % (frame, name, rank))
        shape = tuple(r.take("<q") for _ in range(rank))
        if dtype not in DTYPES:
            raise ProtocolError("%s tensor '%s' is invalid: unknown dtype code %d" % (frame, name, dtype))
        if not name or len(name) > 255 or any(d < 0 for d in shape):
            raise ProtocolError("%s tensor '%s' is invalid" % (frame, name))
        tensors.append(TensorSpec(name, dtype, shape))
    return tuple(tensors)


def _decode_status(r):
    pid, name, source = _non_negative(r.take("<q")), r.string(), r.string()
    state = r.take("<B")
    if state >= len(STATES):
        raise ProtocolError("STATUS holds unknown state %d" % state)
    batch = _positive(r.take("<i"))
    counts = [_non_negative(v) for v in r.take("<qqqqqq")]
    rate = _rate(r.take("<d"))
    slot_count = _positive(r.take("<i"))
    slot_bytes, in_use, band, window = (_non_negative(v) for v in r.take("<qiii"))
    uptime, attached, evictions = (_non_negative(v) for v in r.take("<qiq"))
    mid_epoch = r.take("<B")
    cache = CacheStatus(*(_non_negative(v) for v in r.take("<qqqqqq")))
    if cache.bytes_held > cache.capacity_bytes or cache.samples_held > cache.samples:
        raise ProtocolError("STATUS holds a cache holding more than it can")
    listed = r.take("<H")
    if listed > MAX_LISTED or listed > attached or in_use > slot_count or mid_epoch not in (START_ROLLING, START_EXACT):
        raise ProtocolError("STATUS holds an invalid value")
    consumers = []
    for _ in range(listed):
        cid, cpid = (_non_negative(v) for v in r.take("<iq"))
        user = r.string()
        cb, drop = _positive(r.take("<i")), r.bool()
        mode = r.take("<B")
        if mode > START_EXACT:
            raise ProtocolError("STATUS holds start mode %d" % mode)
        epoch, position, lag, held, sent = (_non_negative(v) for v in r.take("<qqqiq"))
        reported, samples, crate = r.bool(), _non_negative(r.take("<q")), _rate(r.take("<d"))
        wait, work, connected = (_non_negative(v) for v in r.take("<qqq"))
        client, ring = r.string(), r.bool()
        job = r.string()
        rank, world = _non_negative(r.take("<i")), _positive(r.take("<i"))
        pace = r.take("<d")
        if not 0.0 <= pace <= 1.0:
            raise ProtocolError("STATUS holds a pace share of %r" % pace)
        lane, lane_samples = (_non_negative(v) for v in r.take("<iq"))
        stream_end = r.take("<q")
        if stream_end < -1:
            raise ProtocolError("STATUS holds a stream end of %d" % stream_end)
        resuming = r.bool()
        consumers.append(ConsumerStatus(cid, cpid, user, cb, drop, mode, epoch, position, lag, held, sent, reported,
                                        samples, crate, wait, work, connected, client, ring, job, rank, world, pace,
                                        lane, lane_samples, stream_end, resuming))
    seeded = r.bool()
    seed = r.take("<q")
    return Status(pid, name, source, state, batch, *counts, rate, slot_count, slot_bytes, in_use, band, window,
                  uptime, attached, evictions, mid_epoch, cache, tuple(consumers), seed if seeded else None)


def _decode_welcome(r):
    session, consumer, pid = r.take("<qiq")
    arena = r.string()
    slot_count, slot_bytes, batch, samples, epochs, mode, start_epoch, start_sample = r.take("<iqiqqBqq")
    source = r.string()
    if (slot_count < 1 or slot_bytes < 1 or batch < 1 or samples < 0 or epochs < 0 or start_epoch < 0
            or start_sample < 0 or mode > START_EXACT):
        raise ProtocolError("WELCOME holds an invalid value")
    tensors = _decode_tensors(r, "WELCOME")
    ring, mid_epoch = r.take("<iB")
    if ring < -1 or mid_epoch not in (START_ROLLING, START_EXACT):
        raise ProtocolError("WELCOME holds an invalid value")
    return Welcome(session, consumer, pid, arena, slot_count, slot_bytes, batch, samples, epochs, mode,
                   start_epoch, start_sample, source, tensors, ring, mid_epoch)


def check_version(version: int, mtype: int, payload: bytes):
    """For a frame of another version: its ERROR if it is one, else raises ProtocolVersionError."""
    e = decode_any_version_error(mtype, payload)
    if e is not None:
        return e
    raise ProtocolVersionError("the peer speaks control protocol version %d and this side version %d; run the "
                               "same TensorSocket release on both sides" % (version, VERSION))
