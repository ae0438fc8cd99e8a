"""A consumer of a TensorSocket producer: batches at this consumer's own batch size, from shared memory.

The contract is the Java ``TensorConsumer``'s, specified in docs/PROTOCOL.md:

* ``for batch in consumer:`` yields one epoch, every sample exactly once in the producer's order (the
  short last batch included unless ``drop_last``); iterating again gives the next epoch.
* A batch inside one arena slot is a zero-copy numpy view of the read-only mapping; a batch that spans
  slots is gathered into a buffer this consumer owns.
* A batch is released when the next one is requested, when ``batch.release()`` is called, or when the
  consumer is closed. Reading ``batch[name]`` afterwards raises ``BatchReleasedError``. Arrays taken
  from a batch before its release stay valid and unchanged (see ``_memory``): the slot goes back to the
  producer only once they are gone, or after their pages were swapped for a private copy.
* Every wait is bounded; a dead producer, an ERROR from it, or a broken rule raises a specific
  exception (``errors``) within a second.

Positions, regrouping and releases follow the stream model (``stream``, a port of the Java one).

One thread iterates a consumer.
"""

import os
import time
from typing import Optional, Union

from . import _checkpoint, _stream_end, wire
from . import arena as _arena
from . import directory as _directory
from . import handshake as _handshake
from . import rings as _rings
from . import stream as _stream
from ._lifecycle import ConsumerBase, checked_batch_size, job_rank
from ._memory import FileMapping
from ._reference import check_consumer_call
from ._waiting import DEFAULT_CONNECT_TIMEOUT
from .assembly import BatchAssembly
from .dtypes import DTYPES
from .errors import EpochIncomplete, ProducerGone, ProtocolError, TensorSocketError, TensorSocketTimeout

_SLICE = 0.05          # seconds between looks at held memory while waiting
_DETACH_AFTER = 0.25   # waiting longer than this lets go of slots pinned only by user arrays
_PROGRESS_EVERY_NS = 1_000_000_000


class TensorConsumer(ConsumerBase):
    """Reads the batches of a running producer, at this consumer's own batch size, from shared memory.

    ::

        with TensorConsumer("cifar", batch_size=64) as consumer:
            for epoch in range(10):
                for batch in consumer:          # one epoch, then the loop ends
                    x, y = batch.torch()["data"], batch.torch()["label"]
    """

    def __new__(cls, name=None, *args, **kwargs):
        # Here, not in __init__: the reference's TensorConsumer("5556", "5557", batch_size=64) fails binding there.
        check_consumer_call(name, args)
        # grpc://HOST:PORT/NAME is a producer on another host, read over Arrow Flight (pyarrow, loaded only then)
        if cls is TensorConsumer and isinstance(name, str) and name.lower().startswith(("grpc://", "grpc+tls://")):
            if kwargs.get("job") is not None:
                raise ValueError("the ranks of a job read from a producer on their own host; job= is not available "
                                 "over Flight (%s)" % name)
            from .flight import RemoteConsumer
            return RemoteConsumer(name, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, name: Optional[str] = None, batch_size: Optional[int] = None, drop_last: bool = False,
                 directory: Optional[Union[str, "os.PathLike[str]"]] = None, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 batch_timeout: float = 120.0, liveness: float = 10.0, wait_for_epoch_start: bool = False,
                 job: Optional[str] = None, rank: Optional[int] = None, world_size: Optional[int] = None,
                 handoff: str = "ring", spin: float = 0.0):
        """``liveness``: seconds a waiting consumer accepts hearing nothing from the producer (which sends a
        heartbeat every second while it has nothing else to send) before raising ProducerNotResponding.
        ``wait_for_epoch_start``: arriving too late to start at the current epoch's start, wait for the next
        epoch's start instead of starting mid-epoch (exact, or rolling); ``start_mode`` and ``start_epoch`` say which
        happened. ``job``: read as rank ``rank`` of the ``world_size`` ranks of this data-parallel job (rank and
        world size default to torchrun's RANK and WORLD_SIZE): the job's ranks share each epoch, each an equal share,
        as DistributedSampler deals them; the producer starts them together once all have joined, and a rank that
        dies fails its job (JobFailed for the others). ``handoff``: how the producer hands this consumer its batches,
        "ring" (a descriptor ring in shared memory, on which a waiting consumer sleeps on a futex; the default, as
        for the Java consumer, where the platform has futexes and the producer a free ring) or "socket" (BATCH
        frames on the control socket); :attr:`handoff` says which it got. ``spin``: seconds a waiting consumer
        polls its ring before it sleeps (lower latency for a core to spare; 0 to 1)."""
        self.batch_size = checked_batch_size(batch_size)
        self.job_rank = job_rank(job, rank, world_size)
        if name is None and directory is None:
            raise ValueError("give the producer's name or its directory")
        self.drop_last = bool(drop_last)
        self.connect_timeout = float(connect_timeout)
        self.batch_timeout = float(batch_timeout)
        self.liveness = float(liveness)
        if self.liveness < 2:
            raise ValueError("liveness of %r s is too short: the producer sends a heartbeat once a second, so allow at "
                             "least 2 s" % (liveness,))
        self.wait_for_epoch_start = bool(wait_for_epoch_start)
        if handoff not in ("ring", "socket"):
            raise ValueError("handoff=%r: use 'ring' or 'socket'" % (handoff,))
        if not 0 <= float(spin) <= 1:
            raise ValueError("spin=%r s: use 0 to 1 seconds" % (spin,))
        self._ring = handoff == "ring" and _rings.supported()
        self._spin = float(spin)
        d = os.path.abspath(os.fspath(directory)) if directory is not None else str(_directory.directory_for(name))
        self.producer = name if name is not None else os.path.basename(d)
        self.directory = d
        self._link = None
        self._wait_ns = 0
        self._work_ns = 0
        self._outside_since = 0
        self._samples_handed = 0
        self._last_progress_ns = 0
        self._fd = -1
        self._arena_mm = None
        self._lanes = []  # (fd, mapping) of each lane arena it was moved to
        self._violation = None  # a protocol violation read ahead, raised once the consumer needs that message
        self._connect()

    # -------------------------------------------------------------------------------------- connecting

    def _connect(self, resume=None):
        session = _handshake.join(self.producer, self.directory, self.batch_size, self.drop_last, self.connect_timeout,
                                  self.liveness, self.wait_for_epoch_start, self.job_rank, self._ring, resume)
        w = session.welcome
        self._link = session.link
        self._link.spin = self._spin
        self._handoff = "ring" if self._link.ring is not None else "socket"
        self._welcome = w
        self._layout = session.layout
        self._fd = session.arena_fd
        self._arena_mm = session.arena_mm
        self._assembly = BatchAssembly(session.layout, self._fd, self._arena_mm.bytes(),
                                       self.batch_size)
        self._closed = False
        self._specs = w.tensors
        share = _stream.ALL if self.job_rank is None else _stream.RankShare(self.job_rank[1], self.job_rank[2])
        self._stream = _stream.ConsumerStream(_stream.StreamGeometry(w.samples_per_epoch, w.producer_batch_size),
                                              w.slot_count, self.batch_size, self.drop_last, w.start_epoch,
                                              w.start_sample, share)
        self.samples_per_epoch = self._stream.share_count  # the producer's epoch, or this rank's share of it
        self._views = {}  # seq -> the SlotMap views of that batch's slot came from
        self._current = None
        self._resuming = resume is not None  # this connection serves the rest of a checkpoint's epoch, then ends
        if resume is not None:
            self._stream.resume_at(resume.handed)

    # -------------------------------------------------------------------------------------- checkpoints

    def state_dict(self) -> dict:
        """Where this consumer stands, as a small dict of plain values for ``torch.save`` beside the model (as
        torchdata's StatefulDataLoader gives): the producer and the orders it read, its epoch and the samples of it
        handed out. It describes the next batch to come: a consumer given it by :meth:`load_state_dict` goes on
        there."""
        self._check_open()
        return _checkpoint.take(self, self._stream, self._welcome)

    def load_state_dict(self, state: dict) -> None:
        """Continues the epoch ``state`` (from :meth:`state_dict`, of a consumer of the same producer, batch size and
        rank) was taken in: the next iteration yields every sample of that epoch not read before the state was taken,
        once, loaded again by index, whether the producer ran on, lingers or was restarted with the same data set and
        seed; later iterations are whole epochs. Call it before iterating. ValueError names what does not match;
        RequestRejected says why the producer cannot load the rest (another seed or data set, a source that fixes
        its own order)."""
        self._check_open()
        if self._stream.epoch_started:
            raise ValueError("load_state_dict() continues an epoch from a checkpoint: call it before iterating")
        resume = _checkpoint.resume_frame(self, self._welcome, state)
        if resume is None:
            return  # nothing of that epoch is left: the next epoch is a whole one, as this consumer's are
        self.close()
        self._connect(resume)

    # -------------------------------------------------------------------------------------- info

    def __len__(self):
        """Batches in one epoch at this consumer's batch size."""
        return self._stream.batches_per_epoch()

    @property
    def producer_batch_size(self) -> int:
        return self._welcome.producer_batch_size

    @property
    def epoch(self) -> int:
        """The epoch being iterated, or about to be (see the Java TensorConsumer.epoch())."""
        return self._stream.epoch

    @property
    def start_mode(self) -> str:
        """'epoch_start', 'exact' or 'rolling': how this consumer's first epoch lines up with the producer's
        stream ('exact': it joined mid-epoch and each of its epochs is still one pass over the data set, since
        the producer chooses the order; 'rolling': it joined mid-epoch of a source that fixes its own order)."""
        return wire.START_LABELS[self._welcome.start_mode]

    @property
    def mid_epoch(self) -> str:
        """'exact' or 'rolling': how any consumer joining this producer mid-epoch starts."""
        return wire.START_LABELS[self._welcome.mid_epoch]

    @property
    def start_epoch(self) -> int:
        return self._welcome.start_epoch

    @property
    def start_sample(self) -> int:
        return self._welcome.start_sample

    @property
    def source_description(self) -> str:
        return self._welcome.source

    @property
    def producer_epochs(self) -> int:
        return self._welcome.epochs

    @property
    def tensors(self):
        """(name, dtype name, per-sample shape) of every tensor of a batch, in order."""
        return [(t.name, DTYPES[t.dtype][0], t.shape) for t in self._specs]

    def stream_position(self, batch, sample: int = 0) -> int:
        """Producer epoch x samples per epoch + sample, of a batch's sample ``sample`` (its first by default): one
        more per sample, or ``world_size`` more for a rank of a job."""
        return self._stream.stream_position(batch.epoch, batch.sample_start + sample)

    def is_end_of_stream(self) -> bool:
        """Whether the producer's stream has ended and every batch of it was handed out."""
        if not self._closed and not self._stream.stream_ended and self._link.stream_ended:
            while True:
                m = self._link.poll(0)
                if m is None:
                    break
                self._handle(m)
        return self._stream.is_end_of_stream(self._welcome.epochs)

    # -------------------------------------------------------------------------------------- iteration

    def __iter__(self):
        """Iterates the next epoch; the unfinished rest of the previous one is skipped first."""
        return self.batches()

    def batches(self, keep: bool = False):
        """Iterates the next epoch, as ``iter(consumer)`` does. With ``keep``, a batch is not released when the next
        is requested: it stays valid, and held from the producer, until the caller releases it (every one, in any
        order; the producer waits for a kept batch as for any batch a consumer holds, and evicts one held past its
        stall timeout). For a caller that hands batches to other processes (``Batch.file_region``)."""
        self._check_open()
        self._link.check()
        self._close_current()
        if self._stream.epoch_started:
            self._skip_to(self._stream.epoch_end())
        if self._resuming and self._stream.epoch_started:
            self.close()  # the resumed epoch is over: read on as a consumer that joins now
            self._connect()
        self._apply_arrived()
        if self._stream.is_end_of_stream(self._welcome.epochs):
            got = self._stream.epoch - self._welcome.start_epoch + 1 if self._stream.epoch_started else 0
            raise ProducerGone(_stream_end.no_more_epochs(self.producer, self._welcome, got))
        self._stream.begin_epoch()
        return self._epoch(self._stream.epoch_base, keep)

    def _apply_arrived(self):
        """Applies the messages that arrived already (an end of the stream among them), without waiting."""
        while self._violation is None:
            m = self._link.poll(0)
            if m is None:
                break
            try:
                self._handle(m)
            except ProtocolError as e:
                self._violation = e

    def _whole_or_raise(self):
        """The epoch's batches ran out: returns where it was whole; raises where the stream ended first."""
        missing = self._stream.missing()
        if missing and self._stream.position == self._stream.epoch_base:  # nothing of it came
            raise ProducerGone(_stream_end.no_more_epochs(self.producer, self._welcome,
                                                          self._stream.epoch - self._welcome.start_epoch))
        if missing:
            raise EpochIncomplete(_stream_end.short_epoch(self.producer, self._welcome, self._stream.epoch, missing),
                                  self._stream.epoch, missing)

    def _epoch(self, base, keep=False):
        while True:
            if self._closed or self._stream.epoch_base != base:
                return  # closed, or a newer iterator took over
            entered = self._enter()
            try:
                if keep:
                    self._current = None  # the caller's to release
                else:
                    self._close_current()
                n = self._next_batch_size()
                if n == 0:
                    self._whole_or_raise()
                    return
                self._current = self._assemble(n)
                self._samples_handed += n
            finally:
                self._leave(entered)
            yield self._current

    # Time inside the iterator is waiting for data; time between batches is the caller's work. Both go to
    # the producer about once a second (PROGRESS), for `tensorsocket status`.
    def _enter(self):
        now = time.monotonic_ns()
        if self._outside_since:
            self._work_ns += now - self._outside_since
            self._outside_since = 0
        return now

    def _leave(self, entered):
        now = time.monotonic_ns()
        self._wait_ns += now - entered
        self._outside_since = now
        if not self._closed and self._samples_handed and now - self._last_progress_ns >= _PROGRESS_EVERY_NS:
            self._last_progress_ns = now
            try:
                self._link.send(wire.Progress(self._stream.epoch, self._samples_handed, self._wait_ns, self._work_ns))
            except TensorSocketError:
                pass  # the next call on the consumer reports a lost producer

    @property
    def handoff(self) -> str:
        """How batches reach this consumer: "ring" (its descriptor ring in shared memory) or "socket" (BATCH_READY
        frames on its control socket)."""
        return self._handoff

    @property
    def work_seconds(self) -> float:
        """Time spent outside the iterator (the caller's training step) since the first batch."""
        return self._work_ns / 1e9

    def _next_batch_size(self):
        self._link.check()
        # What arrived already is applied first: a MOVE among it is answered at this batch, not once the batches
        # held are used up (the other consumers would wait for them). A violation among it is raised where the
        # consumer needs what it spoiled: the valid batches before it are handed out first.
        self._apply_arrived()
        waited_from = time.monotonic()
        while True:
            n = self._stream.next_batch()
            if n != _stream.NEED_MORE:
                self._release_consumed()
                return n
            self._receive_one(waited_from)

    def _receive_one(self, waited_from):
        """Waits one slice for a message from the producer and applies it, letting go of held slots meanwhile."""
        if self._violation is not None:
            raise self._violation
        m = self._link.poll(_SLICE)
        if m is not None:
            self._handle(m)
            return
        now = time.monotonic()
        self._release_consumed(detach=now - waited_from >= _DETACH_AFTER)  # user-held arrays never stall the producer
        self._link.check_alive(self.liveness, "batch data")
        if now - waited_from >= self.batch_timeout:
            self._link.check()
            raise TensorSocketTimeout("waited %d ms for batch data from producer '%s'; the producer is alive but "
                                      "sent nothing (a slow loader, or a stalled peer holding everyone up); raise "
                                      "the consumer's batch_timeout if that is expected"
                                      % (self.batch_timeout * 1000, self.producer))

    def _handle(self, m):
        if isinstance(m, wire.BatchReady):
            try:
                self._stream.accept(_stream.BatchPosition(m.seq, m.epoch, m.index, m.sample_start, m.samples), m.slot)
            except ValueError as e:
                raise ProtocolError("producer '%s' sent %s" % (self.producer, e)) from None
        elif isinstance(m, wire.EpochEnd):
            if m.samples != self._welcome.samples_per_epoch:
                raise ProtocolError("producer '%s' ended epoch %d after %d samples, not %d"
                                    % (self.producer, m.epoch, m.samples, self._welcome.samples_per_epoch))
        elif isinstance(m, wire.EndOfStream):
            self._stream.end_of_stream()
        elif isinstance(m, wire.Move):
            self._move(m)
        else:
            raise ProtocolError("unexpected %s from producer '%s'" % (type(m).__name__, self.producer))

    def _move(self, m):
        """The producer moved this consumer to lane ``m.lane`` (it fell behind the others): maps the lane's arena,
        gives back the batches it has not begun and says where its lane starts. Lane 0 is back to the main stream (it
        caught up): it keeps everything and says nothing."""
        try:
            if m.lane == 0:
                self._stream.move_to(m.seq_base, 0, 0, m.slot_count, False)
                return
            base = self._assembly.add_arena(*self._map_lane(m.lane, m.slot_count))
            # a lane shared with others may be past its first batch: its batches come in order from any of its seqs
            position = self._stream.move_to(-1, m.seq_base, base, m.slot_count, True)
        except ValueError as e:
            raise ProtocolError("producer '%s' sent %s" % (self.producer, e)) from None
        self._link.send(wire.Moved(position))

    def _map_lane(self, lane, slot_count):
        """The layout, descriptor and mapping of lane ``lane``'s arena, beside the producer's."""
        layout = _arena.Layout(self._welcome.tensors, self._welcome.producer_batch_size, slot_count)
        path = os.path.join(self.directory, _directory.LANE_FILE_PREFIX + str(lane))
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            self._link.await_error()  # an eviction said after the MOVE explains a lane that is gone best
            raise ProducerGone("producer '%s' moved this consumer to lane %d, whose arena %s is gone"
                               % (self.producer, lane, path)) from None
        try:
            _arena.header_problem(layout, os.pread(fd, _arena.HEADER_BYTES, 0), self._welcome.session_id, path)
            mapping = FileMapping(fd, layout.file_bytes, 0)
        except BaseException:
            os.close(fd)
            raise
        self._lanes.append((fd, mapping))
        return layout, fd, mapping.bytes()

    def _skip_to(self, target):
        # Skips what has arrived and releases it before waiting for more: a range longer than the arena could
        # never arrive while the slots of its start were held.
        waited_from = time.monotonic()
        while not self._stream.skip_arrived(target):
            self._release_consumed()
            if self._stream.stream_ended:
                return
            self._receive_one(waited_from)
        self._release_consumed()

    def _assemble(self, n):
        batch = self._assembly.assemble(self._stream.take(n), self._on_batch_released, self._views)
        self._release_consumed()
        return batch

    def _on_batch_released(self, pinned):
        if pinned >= 0:
            self._stream.unpin(pinned)
        if not self._closed:
            try:
                self._release_consumed()
            except TensorSocketError:
                pass  # the next call on the consumer reports it; releasing a batch does not

    def _release_consumed(self, detach=False):
        """Releases, in stream order, every fully consumed batch nothing reads any more. A batch whose
        slot only user-held arrays still use is detached (copied in place) if ``detach``, or if another
        such batch is already waiting behind it, so at most one slot is ever pinned that way."""
        s = self._stream
        while True:
            seq = s.peek_releasable()
            if seq < 0:
                return
            sm = self._views.get(seq)
            if sm is not None and sm.in_use():
                if not detach and s.count_releasable() < 2:
                    return
                self._detach(seq, sm)
            self._views.pop(seq, None)
            s.poll_releasable()
            self._link.send(wire.Release(seq))

    def _detach(self, seq, sm):
        sm.detach()
        self._assembly.forget(sm)

    def _label(self):
        return "producer '%s'" % self.producer

    # -------------------------------------------------------------------------------------- closing

    def close(self):
        """Leaves the producer: the current batch is released, arrays still held by the caller are
        detached from the arena, and the producer frees everything this consumer held. Idempotent."""
        if self._closed:
            return
        b, self._current = self._current, None
        if b is not None:
            b._on_release = None
            b._arrays = None
        self._closed = True
        try:
            for seq, sm in list(self._views.items()):
                if sm.in_use():
                    self._detach(seq, sm)
        finally:
            self._views.clear()
            self._stream.clear()
            self._link.close()
            self._assembly.close()
            self._arena_mm.close()
            os.close(self._fd)
            for fd, mapping in self._lanes:
                mapping.close()
                os.close(fd)
            self._lanes.clear()

