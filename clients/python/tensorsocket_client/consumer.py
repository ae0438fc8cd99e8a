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
import queue
import socket
import sys
import threading
import time
import warnings
from typing import Any, Dict, List, Optional, Union

import numpy as np

from . import arena as _arena
from . import stream as _stream
from . import wire
from ._memory import GatherPool, SlotMap, map_read_only
from ._waiting import DEFAULT_CONNECT_TIMEOUT, Waiting
from .errors import (ConsumerEvicted, PermissionDenied, ProducerFailed, ProducerGone, ProducerNotFound, ProducerNotResponding,
                     ProtocolError, ProtocolVersionError, RequestRejected, TensorSocketError,
                     TensorSocketTimeout, BatchReleasedError)

_WAKE = object()
_SLICE = 0.05          # seconds between looks at held memory while waiting
_DETACH_AFTER = 0.25   # waiting longer than this lets go of slots pinned only by user arrays
_PROGRESS_EVERY_NS = 1_000_000_000
_AWAITS_FEEDER = "it waits for its feeder to declare the batches"


# How long a consumer whose send failed waits for the producer's last word (an ERROR saying why) to be read.
_ERROR_READ_S = 1.0

class _Link:
    """The control connection. A receiver thread reads every frame as it arrives, so the producer's
    death (EOF) or an ERROR it sends is known at once, even while the consumer is busy training. It
    answers each HEARTBEAT with one and notes when anything last arrived (``last_heard``): a waiting
    consumer that heard nothing for its liveness timeout reports the producer as not responding."""

    def __init__(self, sock, producer):
        self.sock = sock
        self.producer = producer
        self.inbox = queue.Queue()
        self.failure = None
        self.stream_ended = False
        self.closing = False
        self.producer_pid = -1
        self.last_heard = time.monotonic()
        self._send_lock = threading.Lock()
        self.thread = threading.Thread(target=self._receive, name="tensorsocket-consumer-rx", daemon=True)
        self.thread.start()

    def _read_exact(self, n, eof_ok):
        chunks = []
        got = 0
        while got < n:
            b = self.sock.recv(n - got)
            if not b:
                if eof_ok and got == 0:
                    return None
                raise EOFError("connection closed in the middle of a frame")
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)

    def _read(self):
        head = self._read_exact(wire.HEADER_BYTES, True)
        if head is None:
            return None
        version, mtype, length = wire.decode_header(head)
        payload = self._read_exact(length, False) if length else b""
        if version != wire.VERSION:
            return wire.check_version(version, mtype, payload)
        return wire.decode_payload(mtype, payload)

    def _receive(self):
        try:
            while True:
                m = self._read()
                if m is None:
                    if not self.stream_ended:
                        self._fail(self.lost_connection(None))
                    return
                self.last_heard = time.monotonic()
                if isinstance(m, wire.Heartbeat):
                    self._answer(m)
                    continue
                if isinstance(m, wire.Error):
                    self._fail(self.to_exception(m))
                    return
                if isinstance(m, wire.EndOfStream):
                    self.stream_ended = True
                self.inbox.put(m)
        except TensorSocketError as e:
            self._fail(e)
        except (OSError, EOFError) as e:
            if not self.stream_ended:
                self._fail(self.lost_connection(e))

    def _answer(self, heartbeat):
        try:
            with self._send_lock:
                self.sock.sendall(wire.encode(heartbeat))
        except OSError:
            pass  # a broken connection shows up as EOF on the next read

    def not_responding(self, silence, awaited):
        pid = "(pid %d) " % self.producer_pid if self.producer_pid > 0 else ""
        return ProducerNotResponding(
            "producer '%s' %sis not responding: nothing arrived from it, not even its once-a-second heartbeat, for %d "
            "ms while this consumer waited for %s. Its process is alive but stopped (SIGSTOP, Ctrl-Z, a debugger) or "
            "deadlocked; resume it (kill -CONT %s) or restart it. A slow loader does not cause this; raise the "
            "consumer's liveness timeout (liveness=) if the producer's machine is badly overloaded"
            % (self.producer, pid, silence * 1000, awaited, self.producer_pid if self.producer_pid > 0 else "<pid>"))

    def check_alive(self, liveness, awaited):
        """Raises ProducerNotResponding if nothing arrived for ``liveness`` seconds (only while waiting)."""
        silence = time.monotonic() - self.last_heard
        if silence >= liveness:
            self.check()
            if self.failure is None:
                self.failure = self.not_responding(silence, awaited)
            raise self.failure

    def lost_connection(self, cause):
        return ProducerGone("lost the connection to producer '%s'%s: it exited or was killed%s; restart it and "
                            "connect again" % (self.producer,
                                               " (pid %d)" % self.producer_pid if self.producer_pid > 0 else "",
                                               " (%s)" % cause if cause else ""))

    def _fail(self, e):
        if self.failure is None and not self.closing:
            self.failure = e
        self.inbox.put(_WAKE)

    def to_exception(self, e):
        msg = e.message if ("producer '" in e.message) else "producer '%s': %s" % (self.producer, e.message)
        kind = {wire.VERSION_MISMATCH: ProtocolVersionError, wire.BAD_FRAME: ProtocolError,
                wire.BAD_REQUEST: RequestRejected, wire.EVICTED: ConsumerEvicted,
                wire.LOADER_FAILED: ProducerFailed, wire.PRODUCER_CLOSED: ProducerGone,
                wire.STOPPED: ProducerGone}.get(e.code, TensorSocketError)
        return kind(msg)

    def check(self):
        if self.failure is not None:
            raise self.failure

    def poll(self, wait):
        """The next message, waiting at most ``wait`` seconds; None if none came."""
        self.check()
        try:
            m = self.inbox.get(timeout=wait) if wait > 0 else self.inbox.get_nowait()
        except queue.Empty:
            return None
        if m is _WAKE:
            self.check()
            return None
        return m

    def send(self, m):
        data = wire.encode(m)
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError as e:
            if self.stream_ended:
                return  # the producer may already be gone after a finished stream
            # A producer that lets this consumer go (an eviction, a shutdown) sends an ERROR saying why and then
            # closes: a send can fail before the receiving thread has read that ERROR. Let it read to the end
            # (briefly) so the error says what happened, not only that the connection broke.
            if threading.current_thread() is not self.thread:
                self.thread.join(_ERROR_READ_S)
            self.check()
            self._fail(self.lost_connection(e))
            self.check()

    def close(self):
        self.closing = True
        try:
            with self._send_lock:
                self.sock.sendall(wire.encode(wire.Bye()))
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(1.0)


_TORCH = None


def _torch_installed() -> bool:
    global _TORCH
    if _TORCH is None:
        import importlib.util
        _TORCH = importlib.util.find_spec("torch") is not None
    return _TORCH


class Batch:
    """One consumer batch: named numpy arrays with the batch dimension first.

    ``batch["data"]`` is an array; ``batch.torch()`` gives torch tensors sharing the same memory;
    ``inputs, labels = batch`` unpacks the tensors in the loader's order (torch tensors with torch). The
    arrays are read-only: they map memory other processes read too (copy one to modify it). A batch is
    valid until the next is requested, ``release()`` or the consumer is closed; arrays taken from it
    before then stay valid after.
    """

    __slots__ = ("epoch", "index", "sample_start", "size", "_arrays", "_on_release", "_label", "_bf16")

    def __init__(self, arrays, epoch, index, sample_start, size, on_release, bf16=frozenset()):
        self._arrays = arrays
        self._bf16 = bf16
        self.epoch = epoch
        self.index = index
        self.sample_start = sample_start
        self.size = size
        self._on_release = on_release
        self._label = "batch %d of epoch %d" % (index, epoch)

    def _live(self):
        if self._arrays is None:
            raise BatchReleasedError("%s was released (the next batch was requested, or it or its consumer was "
                                     "closed); keep the arrays you need, or np.copy() them, before moving on"
                                     % self._label)
        return self._arrays

    def __getitem__(self, name):
        """``batch["data"]``: that tensor as a numpy array; ``batch[0]``: the first tensor as unpacking gives it."""
        arrays = self._live()
        if isinstance(name, int) and not isinstance(name, bool):
            values = list(self)
            try:
                return values[name]
            except IndexError:
                raise IndexError("tensor %d of a batch of %d tensors %s" % (name, len(values), list(arrays))) from None
        try:
            return arrays[name]
        except KeyError:
            raise KeyError("no tensor '%s' in this batch; it has %s" % (name, list(arrays))) from None

    def __len__(self):
        return self.size

    def __iter__(self):
        """The tensors in the loader's order, so ``inputs, labels = batch`` unpacks as the loader yielded them:
        torch tensors sharing this batch's memory (as from :meth:`torch`), or numpy arrays where torch is not
        installed. ``len(batch)`` is the number of samples, not of tensors."""
        if _torch_installed():
            return iter(list(self.torch().values()))
        return iter(list(self._live().values()))

    def keys(self) -> List[str]:
        return list(self._live().keys())

    def arrays(self) -> Dict[str, np.ndarray]:
        """The tensors as a dict of read-only numpy arrays."""
        return dict(self._live())

    def torch(self) -> Dict[str, Any]:
        """The tensors as a dict of torch tensors that share this batch's memory (no copy).

        They are read-only in fact though torch does not know it: writing to one in place crashes the
        process (the memory is mapped read-only). Use ``t.clone()`` or ``t.to(device)`` for a tensor to
        modify.
        """
        import torch
        out = {}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            for name, a in self._live().items():
                if a.dtype == np.uint16 and name in self._bf16:
                    out[name] = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
                else:
                    out[name] = torch.from_numpy(a)
        return out

    @property
    def released(self):
        return self._arrays is None

    def release(self) -> None:
        """Gives the batch back; idempotent."""
        if self._arrays is not None:
            self._arrays = None
            cb, self._on_release = self._on_release, None
            cb()

    close = release

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        if self._arrays is None:
            return "<Batch %s, released>" % self._label
        return "<Batch %s, %d samples: %s>" % (self._label, self.size, ", ".join(
            "%s %s%s" % (k, v.dtype, list(v.shape)) for k, v in self._arrays.items()))


class TensorConsumer:
    """Reads the batches of a running producer, at this consumer's own batch size, from shared memory.

    ::

        with TensorConsumer("cifar", batch_size=64) as consumer:
            for epoch in range(10):
                for batch in consumer:          # one epoch, then the loop ends
                    x, y = batch.torch()["data"], batch.torch()["label"]
    """

    def __new__(cls, name=None, *args, **kwargs):
        # grpc://HOST:PORT/NAME is a producer on another host, read over Arrow Flight (pyarrow, loaded only then)
        if cls is TensorConsumer and isinstance(name, str) and name.lower().startswith(("grpc://", "grpc+tls://")):
            from .flight import RemoteConsumer
            return RemoteConsumer(name, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, name: Optional[str] = None, batch_size: Optional[int] = None, drop_last: bool = False,
                 directory: Optional[Union[str, "os.PathLike[str]"]] = None, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 batch_timeout: float = 120.0, liveness: float = 10.0, wait_for_epoch_start: bool = False):
        """``liveness``: seconds a waiting consumer accepts hearing nothing from the producer (which sends a
        heartbeat every second while it has nothing else to send) before raising ProducerNotResponding.
        ``wait_for_epoch_start``: arriving too late to start at the current epoch's start, wait for the next
        epoch's start instead of starting mid-epoch (rolling); ``start_mode`` and ``start_epoch`` say which
        happened."""
        if batch_size is None or int(batch_size) != batch_size or batch_size < 1:
            raise ValueError("batch_size must be a positive integer, got %r" % (batch_size,))
        if name is None and directory is None:
            raise ValueError("give the producer's name or its directory")
        self.batch_size = int(batch_size)
        self.drop_last = bool(drop_last)
        self.connect_timeout = float(connect_timeout)
        self.batch_timeout = float(batch_timeout)
        self.liveness = float(liveness)
        if self.liveness < 2:
            raise ValueError("liveness of %r s is too short: the producer sends a heartbeat once a second, so allow at "
                             "least 2 s" % (liveness,))
        self.wait_for_epoch_start = bool(wait_for_epoch_start)
        d = os.path.abspath(os.fspath(directory)) if directory is not None else str(_arena.directory_for(name))
        self.producer = name if name is not None else os.path.basename(d)
        self.directory = d
        self._closed = True
        self._link = None
        self._wait_ns = 0
        self._work_ns = 0
        self._outside_since = 0
        self._samples_handed = 0
        self._last_progress_ns = 0
        self._fd = -1
        self._arena_mm = None
        self._connect()

    # -------------------------------------------------------------------------------------- connecting

    def _connect(self):
        name, d = self.producer, self.directory
        waiting = Waiting("producer '%s'" % name, self.connect_timeout)
        awaited_feeder = False
        while True:
            sock, state, not_yet = self._attempt()
            if sock is not None:
                break
            if state == _AWAITS_FEEDER:
                awaited_feeder = True
            elif awaited_feeder and not os.path.isdir(d):
                raise ProducerGone("producer '%s' went away before it served anything: it was waiting for its feeder, "
                                   "which failed or stopped before declaring its batches (its output says why)" % name)
            if waiting.left() <= 0:
                raise not_yet(waiting.within())
            waiting.note(state, _arena.live_producers)
            time.sleep(0.02)
        link = _Link(sock, name)
        try:
            client = ("python3 " + " ".join(sys.argv))[:1000]
            policy = wire.NEXT_EPOCH_START if self.wait_for_epoch_start else wire.JOIN_NOW
            link.send(wire.Hello(self.batch_size, self.drop_last, os.getpid(), client, policy))
            w = self._take_from(link, self.connect_timeout, "the answer to HELLO", self.liveness)
            if not isinstance(w, wire.Welcome):
                raise ProtocolError("producer '%s' answered HELLO with %s" % (name, type(w).__name__))
            link.producer_pid = w.producer_pid
            if w.ring != -1:
                raise ProtocolError("producer '%s' gave descriptor ring %d to this consumer, which asked to be "
                                    "served over its socket" % (name, w.ring))
            layout = _arena.Layout(w.tensors, w.producer_batch_size, w.slot_count)
            arena_path = os.path.join(d, _arena.ARENA_FILE)
            if os.path.normpath(os.path.abspath(w.arena_path)) != os.path.normpath(arena_path):
                raise ProtocolError("producer '%s' announced arena %s outside its directory %s"
                                    % (name, w.arena_path, d))
            if layout.slot_bytes != w.slot_bytes:
                raise ProtocolError("producer '%s' announced %d-byte slots where its layout needs %d"
                                    % (name, w.slot_bytes, layout.slot_bytes))
            try:
                fd = os.open(arena_path, os.O_RDONLY)
            except FileNotFoundError:
                raise ProducerGone("producer '%s' went away while this consumer connected" % name) from None
            try:
                size = os.fstat(fd).st_size
                if size < layout.file_bytes:
                    raise ProtocolError("arena %s is %d bytes but the producer announced %d; is another producer "
                                        "using this directory?" % (arena_path, size, layout.file_bytes))
                _arena.header_problem(layout, os.pread(fd, _arena.HEADER_BYTES, 0), w.session_id, arena_path)
                self._arena_mm = map_read_only(fd, layout.file_bytes, 0)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        except BaseException:
            link.close()
            raise
        self._link = link
        self._welcome = w
        self._layout = layout
        self._arena_bytes = np.frombuffer(self._arena_mm, dtype=np.uint8)
        self._closed = False
        self._slotmaps = {}
        spe = w.samples_per_epoch
        self.samples_per_epoch = spe
        self._specs = w.tensors
        self._np_dtypes = [_arena.DTYPES[t.dtype][1] for t in w.tensors]
        self._numel = [int(np.prod(t.shape, dtype=np.int64)) for t in w.tensors]
        self._sample_bytes = layout.sample_bytes
        self._gather_offsets = []
        off = 0
        for sb in self._sample_bytes:
            self._gather_offsets.append(off)
            off = _arena._align_up(off + sb * self.batch_size, 64)
        self._gather = GatherPool(off)
        bf16 = frozenset(t.name for t in w.tensors if t.dtype == _arena.BFLOAT16)
        self._bf16 = bf16
        self._stream = _stream.ConsumerStream(_stream.StreamGeometry(spe, w.producer_batch_size), w.slot_count,
                                              self.batch_size, self.drop_last, w.start_epoch, w.start_sample)
        self._views = {}  # seq -> the SlotMap views of that batch's slot came from
        self._current = None

    def _attempt(self):
        """One look for the producer: (socket, None, None) once connected, else (None, what the directory shows
        now, a function of the waited time giving the exception to raise if that is still so at the deadline).
        Access problems raise at once: waiting does not mend them."""
        name, d = self.producer, self.directory

        def feed_hint():
            return ("start one: a feeder (tensorsocket_client.TensorProducer(%r, loader), or python3 -m "
                    "tensorsocket_client feed --name %s ...) or %s serve --name %s ..." % (name, name, _arena.launcher(), name))
        if not os.path.isdir(d):
            return None, "no directory %s yet" % d, lambda within: ProducerNotFound(
                "no producer named '%s' appeared%s (no directory %s); running: %s. To %s"
                % (name, within, d, _arena.live_producers(), feed_hint()))
        _arena.check_accessible_to_current_user(d)
        sock_path = os.path.join(d, _arena.SOCKET_FILE)
        if not os.path.exists(sock_path):
            if os.path.exists(os.path.join(d, "feeder.sock")):
                # An external producer opens its control socket once its feeder declared the batches.
                return None, _AWAITS_FEEDER, lambda within: TensorSocketTimeout(
                    "producer '%s' was still waiting for its feeder%s: it serves batches from an external loader that "
                    "has not connected yet; start one (tensorsocket_client.TensorProducer(%r, loader))" % (name, within, name))
            return None, "its directory exists but its control socket does not yet (starting)", \
                lambda within: ProducerNotFound("no producer is running in %s: no control socket appeared%s; running: %s."
                                                " To %s" % (d, within, _arena.live_producers(), feed_hint()))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(sock_path)
            return sock, None, None
        except PermissionError:
            sock.close()
            raise PermissionDenied("not allowed to connect to producer '%s' (%s); it belongs to another user or its "
                                   "permissions exclude you" % (name, sock_path)) from None
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
        # A socket nobody answers: a producer that died (a new one may reclaim the directory) or one starting.
        state = "it is starting" if _arena.is_locked(d) else "%s is left over from a producer that died" % sock_path
        return None, state, lambda within: ProducerNotFound(
            "producer '%s' is not running (%s is left over from a producer that died, and none replaced it%s); start "
            "it again, or remove the leftovers with: %s clean" % (name, sock_path, within, _arena.launcher()))

    @staticmethod
    def _take_from(link, timeout, awaited, liveness):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            m = link.poll(min(max(left, 0), _SLICE))
            if m is not None:
                return m
            link.check_alive(liveness, awaited)
            if left <= 0:
                link.check()
                raise TensorSocketTimeout("waited %d ms for %s from producer '%s'; the producer is alive but sent "
                                          "nothing (a slow loader, or a stalled peer holding everyone up); raise the "
                                          "consumer's timeout if that is expected"
                                          % (timeout * 1000, awaited, link.producer))

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
        """'epoch_start' or 'rolling': how this consumer's first epoch lines up with the producer's stream."""
        return "rolling" if self._welcome.start_mode == wire.START_ROLLING else "epoch_start"

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
        return [(t.name, _arena.DTYPES[t.dtype][0], t.shape) for t in self._specs]

    def stream_position(self, batch: "Batch") -> int:
        """Producer epoch x samples per epoch + sample, of a batch's first sample."""
        return self._stream.stream_position(batch.epoch, batch.sample_start)

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
        self._check_open()
        self._link.check()
        self._close_current()
        if self._stream.epoch_started:
            self._skip_to(self._stream.epoch_end())
        self._stream.begin_epoch()
        return self._epoch(self._stream.epoch_base)

    def _epoch(self, base):
        while True:
            if self._closed or self._stream.epoch_base != base:
                return  # closed, or a newer iterator took over
            entered = self._enter()
            try:
                self._close_current()
                n = self._next_batch_size()
                if n == 0:
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
        """How batches reach this consumer: "socket" (BATCH_READY frames on its control socket)."""
        return "socket"

    @property
    def wait_seconds(self) -> float:
        """Time the iterator spent waiting for data since the consumer connected."""
        return self._wait_ns / 1e9

    @property
    def work_seconds(self) -> float:
        """Time spent outside the iterator (the caller's training step) since the first batch."""
        return self._work_ns / 1e9

    def _next_batch_size(self):
        self._link.check()
        waited_from = time.monotonic()
        while True:
            n = self._stream.next_batch()
            if n != _stream.NEED_MORE:
                self._release_consumed()
                return n
            self._receive_one(waited_from)

    def _receive_one(self, waited_from):
        """Waits one slice for a message from the producer and applies it, letting go of held slots meanwhile."""
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
            if m.samples != self.samples_per_epoch:
                raise ProtocolError("producer '%s' ended epoch %d after %d samples, not %d"
                                    % (self.producer, m.epoch, m.samples, self.samples_per_epoch))
        elif isinstance(m, wire.EndOfStream):
            self._stream.end_of_stream()
        else:
            raise ProtocolError("unexpected %s from producer '%s'" % (type(m).__name__, self.producer))

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

    def _slotmap(self, slot):
        sm = self._slotmaps.get(slot)
        if sm is None:
            sm = SlotMap(self._fd, self._layout.slot_offset(slot), self._layout.slot_bytes)
            self._slotmaps[slot] = sm
        return sm

    def _assemble(self, n):
        plan = self._stream.take(n)
        arrays = {}
        layout = self._layout
        single = plan.pieces[0] if plan.single else None
        if single is not None:
            sm = self._slotmap(single.slot)
            self._views[single.seq] = sm
            for t, spec in enumerate(self._specs):
                off = layout.region_offsets[t] + single.offset * self._sample_bytes[t]
                arrays[spec.name] = sm.view(self._np_dtypes[t], n * self._numel[t], off, (n,) + spec.shape)
        else:
            buf = self._gather.take()
            for t, spec in enumerate(self._specs):
                sb = self._sample_bytes[t]
                g = self._gather_offsets[t]
                for p in plan.pieces:
                    src = layout.slot_offset(p.slot) + layout.region_offsets[t] + p.offset * sb
                    dst = g + p.dest_offset * sb
                    buf[dst:dst + p.samples * sb] = self._arena_bytes[src:src + p.samples * sb]
                arr = buf[g:g + n * sb].view(self._np_dtypes[t]).reshape((n,) + spec.shape)
                arr.flags.writeable = False
                arrays[spec.name] = arr
        pinned = single.seq if single is not None else -1
        batch = Batch(arrays, plan.epoch, plan.index, plan.sample_start, n,
                      lambda: self._on_batch_released(pinned), self._bf16)
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
        slot = seq % self._layout.slot_count
        if self._slotmaps.get(slot) is sm:
            del self._slotmaps[slot]

    def _close_current(self):
        b, self._current = self._current, None
        if b is not None:
            b.release()

    def _check_open(self):
        if self._closed:
            raise TensorSocketError("this consumer of producer '%s' is closed" % self.producer)

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
            for sm in self._slotmaps.values():
                if sm.in_use():
                    sm.detach()
                sm.close()
            self._slotmaps.clear()
            del self._arena_bytes
            self._arena_mm.close()
            os.close(self._fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<TensorConsumer of '%s', batch size %d%s>" % (self.producer, self.batch_size,
                                                              ", closed" if self._closed else "")
