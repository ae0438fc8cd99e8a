"""A consumer of a producer on another host, served over Apache Arrow Flight (``tensorsocket serve --flight``).

    from tensorsocket_client import TensorConsumer
    with TensorConsumer("grpc://gpu-feeder:8815/imagenet", batch_size=64) as loader:
        for batch in loader:
            ...

It has the contract of the local consumer (one epoch per iteration, exactly once and in order, each batch
valid until the next is asked for); each batch's arrays are read-only views of the received Arrow buffers.
The stream it reads is specified in docs/PROTOCOL.md, section 8. ``pyarrow`` is an optional dependency of
this client: it is imported only when a ``grpc://`` or ``grpc+tls://`` name is used.

The token and trusted certificates come from the arguments or, like the Java library, from the environment:
``TENSORSOCKET_TOKEN``, ``TENSORSOCKET_TOKEN_FILE`` (its first line) and ``TENSORSOCKET_TRUST`` (a PEM file).
"""

import math
import os
import struct
import threading
import time
import urllib.parse

import numpy as np

from . import _message_memory, stream
from . import dtypes as _dtypes
from ._lifecycle import ConsumerBase, checked_batch_size
from ._waiting import DEFAULT_CONNECT_TIMEOUT
from ._waiting import Waiting as _Waiting
from .batch import Batch
from .errors import (
    ConsumerEvicted,
    PermissionDenied,
    ProducerFailed,
    ProducerGone,
    ProducerNotFound,
    ProtocolError,
    RequestRejected,
    TensorSocketTimeout,
)

SCHEMES = ("grpc", "grpc+tls")
_NUMPY_DTYPES = {name: np.dtype(t) for name, t in _dtypes.BY_NAME.items()}
_TAG = struct.Struct("<iiqqqqq")
_MAGIC = 0x54534631
BATCH, END_OF_EPOCH, END_OF_STREAM, HEARTBEAT = 1, 2, 3, 4


_WATCH_PERIOD_S = 0.1
# How a server's stream says that its producer refused or ended the stream.
_PRODUCER_GONE = "ProducerGoneException: "
# A watchdog tick this late means the whole process was stopped, not that the server fell silent.
_PAUSED_AFTER_S = 0.5


# What gRPC says of a call that reached no server: nothing listens at the address yet, or its name does not resolve.
_NOT_REACHED = ("failed to connect", "connection refused", "dns resolution failed")

def is_remote(name):
    """Whether ``name`` is a ``grpc://`` or ``grpc+tls://`` address rather than a local producer name."""
    return isinstance(name, str) and name.lower().startswith(tuple(s + "://" for s in SCHEMES))


def parse_address(text):
    """``grpc://HOST:PORT/NAME`` -> (tls, host, port, name); ValueError says what is wrong."""
    form = " (expected grpc://HOST:PORT/NAME or grpc+tls://HOST:PORT/NAME)"
    u = urllib.parse.urlsplit(text)
    scheme = u.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError("'%s' has scheme '%s'%s" % (text, scheme, form))
    try:
        port = u.port
    except ValueError as e:
        raise ValueError("'%s' has a bad port: %s%s" % (text, e, form)) from None
    if not u.hostname or port is None:
        raise ValueError("'%s' names no HOST:PORT%s" % (text, form))
    name = u.path[1:] if u.path.startswith("/") else u.path
    if not name or "/" in name:
        raise ValueError("'%s' names no producer after HOST:PORT/%s" % (text, form))
    if u.query or u.fragment:
        raise ValueError("'%s' carries a query or fragment; pass options separately%s" % (text, form))
    return scheme == "grpc+tls", u.hostname, port, name


def _flight():
    try:
        import pyarrow.flight as fl
    except ImportError as e:
        raise ImportError("reading a grpc:// producer needs pyarrow (pip install pyarrow): %s" % e) from None
    return fl


def _env_token():
    token = os.environ.get("TENSORSOCKET_TOKEN") or None
    path = os.environ.get("TENSORSOCKET_TOKEN_FILE")
    if token is None and path:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ValueError("TENSORSOCKET_TOKEN_FILE %s is empty" % path)
    return token


class RemoteConsumer(ConsumerBase):
    """Reads a producer served over Flight at ``grpc://HOST:PORT/NAME``; see the module comment."""

    def __init__(self, name=None, batch_size=None, drop_last=False, directory=None, connect_timeout=DEFAULT_CONNECT_TIMEOUT,
                 batch_timeout=120.0, token=None, token_file=None, trust=None, epochs=0, silence_timeout=2.0,
                 wait_for_epoch_start=False):
        if directory is not None:
            raise ValueError("a grpc:// producer has no local directory; pass only its address")
        self.batch_size = checked_batch_size(batch_size)
        tls, host, port, producer = parse_address(name)
        self.address = name
        self.producer = producer
        self.drop_last = bool(drop_last)
        self._silence = float(silence_timeout)
        if token is None and token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token is None:
            token = _env_token()
        trust = trust if trust is not None else os.environ.get("TENSORSOCKET_TRUST") or None
        fl = _flight()
        self._fl = fl
        self._closed = False
        self._current = None
        self._current_position = -1
        self._epoch_open = False
        self._epoch_done = False
        self._end_of_stream = False
        self._wait_ns = 0
        self._waiting_since = 0.0
        self._last_message = time.monotonic()
        self._timed_out = False
        self._limit = float(connect_timeout)
        self._reader = None
        kwargs = {}
        if tls and trust is not None:
            with open(trust, "rb") as f:
                kwargs["tls_root_certs"] = f.read()
        location = ("grpc+tls://" if tls else "grpc+tcp://") + ("[%s]" % host if ":" in host else host) + ":%d" % port
        self._client = fl.FlightClient(location, **kwargs)
        headers = [(b"authorization", b"Bearer " + token.encode())] if token else []
        self._options = fl.FlightCallOptions(headers=headers)
        ticket = urllib.parse.urlencode([("v", "1"), ("name", producer), ("batch_size", str(self.batch_size)),
                                         ("drop_last", "1" if self.drop_last else "0"), ("epochs", str(int(epochs))),
                                         ("batch_timeout_ms", str(int(batch_timeout * 1000))),
                                         ("start", "next_epoch_start" if wait_for_epoch_start else "join_now")])
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="tensorsocket-remote-watchdog", daemon=True)
        try:
            self._watchdog.start()
            schema = self._open(fl, ticket, float(connect_timeout))
            self._header = self._read_header(schema)
            self._columns = self._read_columns(schema)
            _message_memory.keep_for(self.batch_size * sum(_NUMPY_DTYPES[d].itemsize * math.prod(s)
                                                           for _, d, s in self._columns))
        except BaseException:
            self.close()
            raise
        self.epoch = self._header["start_epoch"]

    def _open(self, fl, ticket, timeout):
        """Opens the stream and returns its schema. A server that is not listening yet (jobs launched
        together) is tried again until ``timeout``, saying once after a few seconds what it waits for."""
        waiting = _Waiting("server %s" % self.address, timeout)
        while True:
            try:
                self._reader = self._await(waiting.left(),
                                           lambda: self._client.do_get(fl.Ticket(ticket.encode()), self._options))
                return self._await(waiting.left(), lambda: self._reader.schema)
            except ProducerGone as e:
                if not getattr(e, "unreachable", False) or waiting.left() <= 0.2:
                    if getattr(e, "unreachable", False):
                        raise ProducerGone("%s did not answer%s: %s" % (self.address, waiting.within(), e)) from None
                    raise
                waiting.note("it does not answer yet")
                time.sleep(0.2)

    # -------------------------------------------------------------------------------------- header

    def _read_header(self, schema):
        m = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
        if m.get("tensorsocket.version") != "1":
            raise ProtocolError("the stream's schema carries no TensorSocket version 1 header (is %s a TensorSocket "
                                "server of this version?)" % self.address)
        try:
            h = {k: int(m["tensorsocket." + k]) for k in ("samples_per_epoch", "batch_size", "drop_last",
                                                          "producer_batch_size", "start_epoch", "start_sample",
                                                          "producer_epochs")}
            h["start_mode"] = m["tensorsocket.start_mode"]
            h["mid_epoch"] = m.get("tensorsocket.mid_epoch", stream.ROLLING)
            h["description"] = m["tensorsocket.description"]
        except (KeyError, ValueError) as e:
            raise ProtocolError("the stream's header from %s lacks or garbles %s" % (self.address, e)) from None
        return h

    def _read_columns(self, schema):
        cols = []
        for f in schema:
            meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
            dtype = meta.get("tensorsocket.dtype")
            if dtype not in _dtypes.BY_NAME:
                raise ProtocolError("column '%s' from %s has dtype %r" % (f.name, self.address, dtype))
            shape_text = meta.get("tensorsocket.shape", "")
            shape = tuple(int(d) for d in shape_text.split(",")) if shape_text else ()
            cols.append((f.name, dtype, shape))
        return cols

    # -------------------------------------------------------------------------------------- info

    def __len__(self):
        n, b = self._header["samples_per_epoch"], self.batch_size
        return n // b if self.drop_last else (n + b - 1) // b

    @property
    def samples_per_epoch(self):
        return self._header["samples_per_epoch"]

    @property
    def producer_batch_size(self):
        return self._header["producer_batch_size"]

    @property
    def start_mode(self):
        return self._header["start_mode"]

    @property
    def mid_epoch(self):
        """'exact' or 'rolling': how any consumer joining this producer mid-epoch starts."""
        return self._header["mid_epoch"]

    @property
    def start_epoch(self):
        return self._header["start_epoch"]

    @property
    def start_sample(self):
        return self._header["start_sample"]

    @property
    def source_description(self):
        return self._header["description"]

    @property
    def producer_epochs(self):
        return self._header["producer_epochs"]

    @property
    def tensors(self):
        """(name, dtype name, per-sample shape) of every tensor of a batch, in order."""
        return list(self._columns)

    def stream_position(self, batch):
        """Producer epoch x samples per epoch + sample, of the current batch's first sample."""
        if batch is not self._current:
            raise ValueError("only the current batch's stream position is known")
        return self._current_position

    def is_end_of_stream(self):
        return self._end_of_stream

    @property
    def handoff(self):
        """How batches reach this consumer: "flight" (Arrow Flight record batches over gRPC)."""
        return "flight"

    # -------------------------------------------------------------------------------------- iteration

    def __iter__(self):
        """Iterates the next epoch; the unfinished rest of the previous one is skipped first."""
        self._check_open()
        self._close_current()
        while self._epoch_open and not self._epoch_done and not self._end_of_stream:
            self._read()
            self._close_current()
        if self._epoch_open:
            self.epoch += 1
        self._epoch_open = True
        self._epoch_done = False
        return self._epoch_batches()

    def _epoch_batches(self):
        while not self._closed and not self._epoch_done and not self._end_of_stream:
            self._close_current()
            kind = self._read()
            if kind == BATCH:
                yield self._current

    def _read(self):
        """Reads messages up to a batch (made current) or an epoch/stream end; returns the kind that stopped it."""
        while True:
            try:
                chunk = self._await(self._silence, self._reader.read_chunk)
            except StopIteration:
                self._end_of_stream = self._epoch_done = True
                return END_OF_STREAM
            meta = chunk.app_metadata
            if meta is None or meta.size < _TAG.size:
                raise ProtocolError("server %s sent a message without a TensorSocket tag" % self.address)
            magic, kind, epoch, index, sample_start, stream_pos, samples = _TAG.unpack(meta.to_pybytes()[:_TAG.size])
            if magic != _MAGIC:
                raise ProtocolError("server %s sent a tag with magic 0x%x" % (self.address, magic & 0xffffffff))
            if kind == HEARTBEAT:
                continue
            if kind == END_OF_EPOCH:
                self._epoch_done = True
                self.epoch = epoch
                return kind
            if kind == END_OF_STREAM:
                self._end_of_stream = self._epoch_done = True
                return kind
            if kind != BATCH:
                raise ProtocolError("server %s sent message kind %d" % (self.address, kind))
            rb = chunk.data
            if rb is None or rb.num_rows != samples:
                raise ProtocolError("server %s tagged a batch of %d samples but sent %s rows"
                                    % (self.address, samples, None if rb is None else rb.num_rows))
            arrays = {}
            bf16 = set()
            for i, (name, dtype, shape) in enumerate(self._columns):
                arrays[name] = self._view(rb.column(i), dtype, shape, samples)
                if dtype == "bfloat16":
                    bf16.add(name)
            self.epoch = epoch
            keep = [rb]  # the arrays view its buffers: the batch holds the record batch until released
            self._current = Batch(arrays, epoch, index, sample_start, samples, keep.clear, frozenset(bf16))
            self._current_position = stream_pos
            return kind

    def _view(self, column, dtype, shape, rows):
        """A read-only numpy view of a column's values buffer: rows x shape of dtype, no copy."""
        storage = column.storage if hasattr(column, "storage") else column
        if hasattr(storage, "values") and hasattr(storage.type, "list_size"):
            offset = storage.offset * storage.type.list_size
            values = storage.values
        else:
            offset = 0
            values = storage
        offset += values.offset
        dt = _NUMPY_DTYPES[dtype]
        count = rows * math.prod(shape)
        buf = values.buffers()[1]
        if dtype == "bool" and values.type.bit_width == 1:
            raise ProtocolError("column of bool from %s is bit-packed; TensorSocket sends it as uint8" % self.address)
        a = np.frombuffer(buf, dtype=dt, count=count, offset=offset * dt.itemsize)
        return a.reshape((rows,) + shape)

    # -------------------------------------------------------------------------------------- waiting

    def _await(self, limit, call):
        """Runs a blocking read under the watchdog: a server silent for ``limit`` seconds is cancelled."""
        self._limit = limit
        start = time.monotonic()
        self._waiting_since = start
        try:
            result = call()
            self._last_message = time.monotonic()
            return result
        except StopIteration:
            raise
        except Exception as e:  # noqa: BLE001 - pyarrow reports call failures as FlightError, ArrowKeyError, OSError
            raise self._translate(e) from None
        finally:
            self._waiting_since = 0.0
            self._wait_ns += int((time.monotonic() - start) * 1e9)

    def _watch(self):
        # Silence counts only while this process runs: after a pause of its own (SIGSTOP, a debugger, a
        # swapped-out machine) the watchdog wakes late, and what the server sent meanwhile waits unread in the
        # socket. Such a late tick starts the count afresh, so the reader drains that first.
        tick = time.monotonic()
        resumed = 0.0
        while not self._stop.wait(_WATCH_PERIOD_S):
            now = time.monotonic()
            if now - tick > _PAUSED_AFTER_S:
                resumed = now
            tick = now
            since = self._waiting_since
            if since and now - max(since, self._last_message, resumed) > self._limit and not self._timed_out:
                self._timed_out = True
                try:
                    if self._reader is not None:
                        self._reader.cancel()
                except Exception:  # noqa: BLE001 - cancelling a broken call may complain
                    pass

    def _translate(self, e):
        where = "server %s" % self.address
        fl = self._fl
        if self._timed_out:
            return ProducerGone("%s went silent for more than %d ms (no batch, no heartbeat): it vanished or the "
                                "network is down" % (where, self._limit * 1000))
        msg = str(e).split(". gRPC client debug context")[0]
        if ", with message: " in msg:
            msg = msg.split(", with message: ", 1)[1]
        if isinstance(e, (fl.FlightUnauthenticatedError, fl.FlightUnauthorizedError)):
            return PermissionDenied("%s refused the connection: %s" % (where, msg))
        if isinstance(e, fl.FlightTimedOutError):
            return TensorSocketTimeout("%s: %s" % (where, msg))
        if isinstance(e, fl.FlightUnavailableError):
            if msg.startswith(_PRODUCER_GONE):
                # the server answered: its producer refused the stream or ended it (not worth trying again)
                return ProducerGone("%s: %s" % (where, msg[len(_PRODUCER_GONE):]))
            gone = ProducerGone("%s is unreachable or went away: %s (is `serve --flight` running there, and the "
                                "address and TLS setting right?)" % (where, msg))
            # Tried again while connecting: only a server never reached (not listening yet, its name not resolved
            # yet); one reached that broke off, killed in the middle of the handshake, went away.
            gone.unreachable = any(m in msg.lower() for m in _NOT_REACHED)
            return gone
        if isinstance(e, KeyError) or "ProducerNotFoundException" in msg or "serves producer" in msg:
            return ProducerNotFound("%s: %s" % (where, msg))
        if "ConsumerEvictedException" in msg:
            return ConsumerEvicted("%s: %s" % (where, msg))
        if "RequestRejectedException" in msg or "IllegalArgumentException" in msg or "bad TensorSocket ticket" in msg:
            return RequestRejected("%s rejected the request: %s" % (where, msg))
        return ProducerFailed("%s failed: %s" % (where, msg))

    # -------------------------------------------------------------------------------------- close

    def _label(self):
        return self.address

    def close(self):
        """Releases the current batch and ends the call; the server frees what it held at once. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._close_current()
        self._stop.set()
        if self._reader is not None:
            try:
                self._reader.cancel()
            except Exception:  # noqa: BLE001
                pass
        try:
            self._client.close()
        except Exception:  # noqa: BLE001
            pass

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
