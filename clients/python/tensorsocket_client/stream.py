"""The stream model: every rule about positions in the producer's stream, with no sockets, threads or
clocks. A port of the Java package ``io.tensorsocket.stream``; the scenarios in
docs/test-vectors/scenarios.txt keep the two equal (tests/test_stream.py).

A stream position counts samples from the start of epoch 0: ``epoch * samples_per_epoch + sample``.
"""

import collections

EPOCH_START = "epoch_start"
ROLLING = "rolling"
EXACT = "exact"
# start policies (HELLO): join at once, or wait for the next epoch start rather than roll
JOIN_NOW = "join_now"
NEXT_EPOCH_START = "next_epoch_start"
NEED_MORE = -1


_UNBOUNDED = (1 << 63) - 1  # an endless stream's last position (Java's Long.MAX_VALUE)


class StreamGeometry:
    """Samples per epoch and the loader's batch size."""

    __slots__ = ("samples_per_epoch", "producer_batch_size")

    def __init__(self, samples_per_epoch, producer_batch_size):
        if samples_per_epoch < 1 or producer_batch_size < 1:
            raise ValueError("a stream needs at least one sample per epoch and per batch")
        self.samples_per_epoch = samples_per_epoch
        self.producer_batch_size = producer_batch_size

    def position(self, epoch, sample):
        return epoch * self.samples_per_epoch + sample

    def epochs_owed(self, start, epochs):
        """Epochs of its own a consumer starting at stream position ``start`` gets from a stream of ``epochs`` epochs:
        each that begins inside it, whole (an endless stream, 0: unbounded). See the Java StreamGeometry.epochsOwed."""
        if epochs <= 0:
            return _UNBOUNDED
        left = epochs * self.samples_per_epoch - start
        return 0 if left <= 0 else (left + self.samples_per_epoch - 1) // self.samples_per_epoch

    def last_epoch_end(self, start, epochs):
        """Stream position just past the last epoch such a consumer is owed: the stream's end, or, for one that joined
        at sample s of an epoch, s samples past it (the tail its producer completes by index)."""
        return _UNBOUNDED if epochs <= 0 else start + self.epochs_owed(start, epochs) * self.samples_per_epoch


class BatchPosition(collections.namedtuple("BatchPosition", "seq epoch index sample_start samples")):
    """Where one published producer batch lies."""

    __slots__ = ()

    def start(self, g):
        return g.position(self.epoch, self.sample_start)

    def end(self, g):
        return self.start(g) + self.samples


class StartPoint(collections.namedtuple("StartPoint", "mode epoch sample first_retained last_retained")):
    """Where a joining consumer starts, and the published batches it is handed first (none if first > last)."""

    __slots__ = ()

    @staticmethod
    def of(mode, epoch, sample):
        return StartPoint(mode, epoch, sample, 0, -1)

    def retained_count(self):
        return max(0, self.last_retained - self.first_retained + 1)

    def sends(self, batch, geometry):
        """Whether a batch published after the join is sent to this consumer: only from its first sample on
        (which matters for one that waits for the next epoch's start)."""
        return geometry.position(batch.epoch, batch.sample_start) >= geometry.position(self.epoch, self.sample)


class ProducerStream:
    """The producer's place in its stream, and the shape rules a source must keep."""

    def __init__(self, geometry):
        self.geometry = geometry
        self.next_epoch = 0
        self.next_index = 0
        self.next_sample = 0
        self.published_seq = -1
        self.epoch_start_seq = -1

    def publish(self, seq, samples):
        b, spe = self.geometry.producer_batch_size, self.geometry.samples_per_epoch
        if samples < 1 or samples > b:
            raise ValueError("a batch holds 1 to %d samples, not %d" % (b, samples))
        if seq != self.published_seq + 1:
            raise ValueError("batch %d published after batch %d" % (seq, self.published_seq))
        if self.next_sample + samples > spe or (samples < b and self.next_sample + samples < spe):
            raise ValueError("batch %d of epoch %d breaks the epoch's shape" % (self.next_index, self.next_epoch))
        p = BatchPosition(seq, self.next_epoch, self.next_index, self.next_sample, samples)
        if self.next_sample == 0:
            self.epoch_start_seq = seq
        self.published_seq = seq
        self.next_index += 1
        self.next_sample += samples
        return p

    def end_epoch(self, epoch):
        if self.next_sample != self.geometry.samples_per_epoch:
            raise ValueError("epoch %d yielded %d samples, not %d" % (epoch, self.next_sample,
                                                                      self.geometry.samples_per_epoch))
        self.next_epoch = epoch + 1
        self.next_sample = 0
        self.next_index = 0
        self.epoch_start_seq = -1

    def epoch_complete(self):
        return self.next_sample == self.geometry.samples_per_epoch


class JoinRule:
    """Where a consumer joining now starts: the epoch start (replaying the epoch's batches while its first is
    inside the rubber band), else, for the NEXT_EPOCH_START policy, the next epoch's start, else rolling from
    the next batch: EXACT where the producer chooses the order (chunked_next keeps such epochs exact), ROLLING
    where the source fixes it."""

    def __init__(self, rubber_band, mid_epoch=ROLLING):
        if mid_epoch not in (ROLLING, EXACT):
            raise ValueError("a mid-epoch start is rolling or exact, not %r" % (mid_epoch,))
        self.rubber_band = rubber_band
        self.mid_epoch = mid_epoch

    def decide(self, stream, policy=JOIN_NOW):
        if stream.next_sample == 0:
            return StartPoint.of(EPOCH_START, stream.next_epoch, 0)
        first = stream.epoch_start_seq
        if first >= 0 and self.in_window(first, stream.published_seq):
            return StartPoint(EPOCH_START, stream.next_epoch, 0, first, stream.published_seq)
        if policy == NEXT_EPOCH_START:
            return StartPoint.of(EPOCH_START, stream.next_epoch + 1, 0)
        return StartPoint.of(self.mid_epoch, stream.next_epoch, stream.next_sample)

    def in_window(self, seq, published_seq):
        return published_seq - self.rubber_band < seq <= published_seq


class Piece(collections.namedtuple("Piece", "seq slot offset samples dest_offset")):
    """``samples`` samples from ``offset`` in slot ``slot``, placed at ``dest_offset`` of the consumer batch."""
    __slots__ = ()


class BatchPlan(collections.namedtuple("BatchPlan", "epoch index sample_start samples pieces")):
    """A consumer batch to hand out; one piece means a view of that slot, pinned until ``unpin``."""

    __slots__ = ()

    @property
    def single(self):
        return len(self.pieces) == 1


class _Held:
    __slots__ = ("seq", "slot", "start", "end", "consumed", "pinned")

    def __init__(self, seq, slot, start, samples):
        self.seq = seq
        self.slot = slot
        self.start = start
        self.end = start + samples
        self.consumed = start
        self.pinned = False


class RankShare(collections.namedtuple("RankShare", "rank world_size")):
    """Which samples of each epoch a consumer takes: all (rank 0 of 1), or rank ``rank``'s share of a job of
    ``world_size`` ranks, dealt as DistributedSampler deals them. See the Java RankShare (layout and diagram)."""
    __slots__ = ()

    def __new__(cls, rank=0, world_size=1):
        if world_size < 1 or rank < 0 or rank >= world_size:
            raise ValueError("rank %d of %d ranks is invalid: a job has at least one rank, numbered 0 to world size - 1"
                             % (rank, world_size))
        return super().__new__(cls, rank, world_size)

    @property
    def partial(self):
        return self.world_size > 1

    def count(self, n, drop_last):
        w = self.world_size
        return n // w if drop_last else (n + w - 1) // w

    def offset(self, k, n, drop_last):
        u = self.rank + k * self.world_size
        if u < n:
            return u
        from_end = self.count(n, drop_last) * self.world_size - 1 - u
        return n - 1 - from_end % n

    def span(self, batch_size):
        return (batch_size - 1) * self.world_size + 1


ALL = RankShare(0, 1)


class ConsumerStream:
    """One consumer's view of the stream: regroups producer batches into its own batch size, says which slots
    each batch spans and which producer batches may be released; of each epoch it takes its ``share``. See the
    Java ConsumerStream."""

    def __init__(self, geometry, slots, batch_size, drop_last, start_epoch, start_sample, share=ALL):
        if batch_size < 1 or slots < 1:
            raise ValueError("batch size and slot count must be at least 1")
        self.share = share
        self.share_count = share.count(geometry.samples_per_epoch, drop_last)
        self.share_index = 0
        self.geometry = geometry
        self.slots = slots
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.start_epoch = start_epoch
        self.start_position = geometry.position(start_epoch, start_sample)
        self.held = collections.deque()
        self.expected_seq = -1
        # Batch seq lies in slot (seq - seq_base) % ring_slots of the ring it comes from (the arena's, or a lane's),
        # which is slot slot_base on of those this consumer reads.
        self.seq_base = 0
        self.slot_base = 0
        self.ring_slots = slots
        self.received_up_to = self.start_position
        self.stream_ended = False
        self.position = self.start_position
        self.epoch_base = self.start_position
        self.epoch = start_epoch
        self.epoch_started = False
        self.batch_index = 0
        self._resumed = 0

    # arrivals

    def accept(self, p, slot):
        """Takes the descriptor of the next producer batch; ValueError if it does not continue the stream."""
        g = self.geometry
        start = p.start(g)
        if ((self.expected_seq >= 0 and p.seq != self.expected_seq) or p.seq < self.seq_base
                or slot != (p.seq - self.seq_base) % self.ring_slots
                or p.samples < 1 or p.samples > g.producer_batch_size or p.sample_start < 0
                or p.sample_start + p.samples > g.samples_per_epoch or start != self.received_up_to
                or self.stream_ended):
            raise ValueError("an inconsistent batch descriptor %s in slot %d (expected seq %d at stream position %d)"
                             % (tuple(p), slot, self.expected_seq, self.received_up_to))
        self.expected_seq = p.seq + 1
        self.held.append(_Held(p.seq, self.slot_base + slot, start, p.samples))
        self.received_up_to = start + p.samples

    def move_to(self, first_seq, seq_base, slot_base, slot_count, give_back):
        """The producer moved this consumer to a lane (or, caught up, back to the main stream: ``give_back`` False):
        gives back the held batches it has not begun, and takes the next descriptors from ``first_seq`` on, each in
        slot ``slot_base + (seq - seq_base) % slot_count`` of those it reads. Returns where its lane starts. See the
        Java ConsumerStream.moveTo."""
        if slot_count < 1 or seq_base < 0 or self.stream_ended:
            raise ValueError("a move to a ring of %d slots from batch %d%s"
                             % (slot_count, seq_base, " after the stream ended" if self.stream_ended else ""))
        while (give_back and self.held and self.held[-1].consumed == self.held[-1].start
               and self.held[-1].start >= self.position and not self.held[-1].pinned):
            self.received_up_to = self.held.pop().start
        self.seq_base, self.slot_base, self.ring_slots = seq_base, slot_base, slot_count
        self.expected_seq = first_seq
        return self.received_up_to

    def end_of_stream(self):
        self.stream_ended = True

    def resume_at(self, handed):
        """This consumer resumes its first epoch from a checkpoint after ``handed`` samples of its share: its first
        epoch goes on from there, the descriptors arriving from the first sample it did not read."""
        self._resumed = handed
        self.position = self.received_up_to = self.epoch_base + self._offset(handed)

    # epochs

    def begin_epoch(self):
        """Begins the next epoch; if one was begun, the caller first skips to its ``epoch_end()``."""
        if self.epoch_started:
            self.epoch_base += self.geometry.samples_per_epoch
            self.epoch += 1
        self.epoch_started = True
        self.batch_index = 0
        self.share_index = 0
        if self._resumed:
            self.share_index, self._resumed = self._resumed, 0
            self.batch_index = -(-self.share_index // self.batch_size)

    def epoch_end(self):
        return self.epoch_base + self.geometry.samples_per_epoch

    def stream_position(self, epoch, sample):
        """Stream position of sample ``sample`` (its index in the epoch's share) of this consumer's epoch ``epoch``."""
        return self.start_position + (epoch - self.start_epoch) * self.geometry.samples_per_epoch + self._offset(sample)

    def batches_per_epoch(self):
        s, b = self.share_count, self.batch_size
        return s // b if self.drop_last else (s + b - 1) // b

    def is_end_of_stream(self, producer_epochs):
        last = self.last_epoch_end(producer_epochs)
        past_last = producer_epochs > 0 and (self.position >= last or (
            self.epoch_started and self.share_index >= self.share_count and self.epoch_end() >= last))
        return past_last or (self.stream_ended and self.position >= self.received_up_to)

    def last_epoch_end(self, producer_epochs):
        return self.geometry.last_epoch_end(self.start_position, producer_epochs)

    def epochs_owed(self, producer_epochs):
        return self.geometry.epochs_owed(self.start_position, producer_epochs)

    def missing(self):
        """Samples of the current epoch's share that never arrive: the stream ended before them (0 while it runs)."""
        if not self.stream_ended or not self.epoch_started:
            return 0
        if not self.share.partial:
            arrived = min(max(self.received_up_to - self.epoch_base, 0), self.share_count)
        else:
            arrived = self.share_index
            while arrived < self.share_count and self.epoch_base + self._offset(arrived) < self.received_up_to:
                arrived += 1
        return self.share_count - arrived

    def _offset(self, k):
        return self.share.offset(k, self.geometry.samples_per_epoch, self.drop_last) if self.share.partial else k

    # batches

    def next_batch(self):
        """Samples in the next batch of this epoch; 0 at its end; NEED_MORE until they arrived. Returning 0 early
        (a dropped tail, or the end of the stream) consumes the samples that are not handed out."""
        end = self.epoch_end()
        partial = self.share.partial
        if partial and self.share_index < self.share_count:
            self.skip_arrived(self.epoch_base + self._offset(self.share_index))  # the other ranks' samples before
        remaining = min(end - self.position, self.share_count - self.share_index)
        if remaining <= 0:
            self.skip_arrived(end)  # a share's last sample may lie before the epoch's end
            return 0
        want = min(self.batch_size, remaining)
        if not partial:
            available = max(0, min(want, self.received_up_to - self.position))
        else:
            available = 0
            while available < want and self.epoch_base + self._offset(self.share_index + available) < self.received_up_to:
                available += 1
        if available < want and not self.stream_ended:
            return NEED_MORE
        if available <= 0 or (self.drop_last and available < self.batch_size):
            self.skip_arrived(end)
            return 0
        return available

    def take(self, n):
        base = self.epoch_base
        start = base + self._offset(self.share_index)
        end = base + self._offset(self.share_index + n - 1) + 1 if n >= 1 else start
        if (n < 1 or self.share_index + n > self.share_count or end > self.received_up_to
                or end > self.epoch_end()):
            raise ValueError("%d samples at stream position %d have not all arrived" % (n, start))
        pieces = []
        if self.share.partial:
            for i in range(n):
                at = base + self._offset(self.share_index + i)
                h = self._holding(at)
                pieces.append(Piece(h.seq, h.slot, at - h.start, 1, i))
        else:
            for h in self.held:
                a, b = max(start, h.start), min(end, h.end)
                if a < b:
                    pieces.append(Piece(h.seq, h.slot, a - h.start, b - a, a - start))
        self.skip_arrived(end)  # everything up to the last sample taken is consumed (the other ranks' samples too)
        if len(pieces) == 1:
            self._find(pieces[0].seq).pinned = True
        plan = BatchPlan(self.epoch, self.batch_index, self.share_index, n, tuple(pieces))
        self.batch_index += 1
        self.share_index += n
        return plan

    def _holding(self, at):
        for h in self.held:
            if h.start <= at < h.end:
                return h
        raise ValueError("no held batch holds stream position %d" % at)

    def skip_arrived(self, target):
        """Consumes the arrived samples up to ``target`` without handing them out; whether it got there."""
        covered = min(target, self.received_up_to)
        if covered > self.position:
            for h in self.held:
                if h.start < covered:
                    h.consumed = max(h.consumed, min(h.end, covered))
            self.position = covered
        return self.position >= target

    def unpin(self, seq):
        h = self._find(seq)
        if h is not None:
            h.pinned = False

    def peek_releasable(self):
        """The seq of the oldest producer batch that may be released now, or -1."""
        h = self.held[0] if self.held else None
        if h is None or h.consumed < h.end or h.pinned:
            return -1
        return h.seq

    def count_releasable(self):
        """How many held batches are consumed and not pinned (releasable once those before them are)."""
        return sum(1 for h in self.held if h.consumed >= h.end and not h.pinned)

    def poll_releasable(self):
        """Removes and returns the oldest releasable producer batch's seq, or -1."""
        seq = self.peek_releasable()
        if seq >= 0:
            self.held.popleft()
        return seq

    def held_seqs(self):
        return [h.seq for h in self.held]

    def clear(self):
        self.held.clear()

    def _find(self, seq):
        for h in self.held:
            if h.seq == seq:
                return h
        return None


# ---- the exact-epoch rule for late joiners (Java: ChunkedShuffle; docs/test-vectors/chunked-shuffle.txt)

def chunked_first(samples, rng):
    """The first epoch's order: a uniform shuffle of ``0..samples-1`` (``rng``: a SplittableRandom)."""
    order = list(range(samples))
    _shuffle(order, 0, samples, rng)
    return order


def chunked_next(previous, boundaries, rng):
    """The next epoch's order after ``previous``: the chunks between consecutive ``boundaries`` (sorted, distinct,
    inside the epoch: the offsets at which live consumers joined mid-epoch) keep their samples, in a new random
    order, so that every such consumer's every epoch is one pass over the data set."""
    order = list(previous)
    start = 0
    for b in boundaries:
        if b <= start or b >= len(order):
            raise ValueError("boundaries %r are not sorted, distinct and inside an epoch of %d samples"
                             % (list(boundaries), len(order)))
        _shuffle(order, start, b, rng)
        start = b
    _shuffle(order, start, len(order), rng)
    return order


def epoch_random(seed, epoch):
    """The randomness of epoch ``epoch``'s shuffle for a source seeded with ``seed`` (a feeder's declared seed), as
    the Java EpochOrders.seeded draws it: ``SplittableRandom(seed * 0x9E3779B97F4A7C15 + epoch)`` modulo 2**64."""
    from .synthetic import GOLDEN, M64, SplittableRandom
    return SplittableRandom((seed * GOLDEN + epoch) & M64)


def _shuffle(a, start, end, rng):
    for i in range(end - 1, start, -1):
        j = start + rng.next_int(i - start + 1)
        a[i], a[j] = a[j], a[i]
