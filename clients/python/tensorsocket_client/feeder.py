"""Feed a Python loader (a torch DataLoader, or any iterable of numpy arrays) into a Java producer.

    from tensorsocket_client import TensorProducer
    TensorProducer("cifar", loader, epochs=10).run()

The Java producer (``tensorsocket serve --name cifar --external``) keeps every consumer rule; this side
declares the batches, asks for a slot, writes each batch straight into the shared memory (one copy) and
publishes it. The frames are specified in docs/PROTOCOL.md (feeder socket, types 14 to 19).
"""

import mmap
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import wire
from .arena import DTYPES, HEADER_BYTES, MAGIC, REGION_ALIGN, _align_up, directory_for
from .errors import ProducerFailed, ProducerNotFound, ProtocolError, TensorSocketError, TensorSocketTimeout

FEEDER_SOCKET_FILE = "feeder.sock"
_CODES = {np.dtype(dt).str: code for code, (_, dt) in DTYPES.items() if code != 7}
_CODES[np.dtype("?").str] = 10
_CODES[np.dtype("u1").str] = 1
_CODES[np.dtype("i1").str] = 2


class FeederError(TensorSocketError):
    """The producer refused this feeder or ended the stream because of what it sent."""


def _dtype_code(arr) -> int:
    dt = np.dtype(arr.dtype)
    key = dt.newbyteorder("<").str if dt.byteorder == ">" else dt.str
    if key not in _CODES:
        raise TypeError("tensor dtype %s has no TensorSocket type; use uint8, int8..int64, float16/32/64 or bool" % dt)
    return _CODES[key]


def _as_numpy(x) -> np.ndarray:
    """A CPU numpy view of a batch tensor (no copy for CPU torch tensors and numpy arrays)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # torch.Tensor
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.numpy()
    return np.asarray(x)


def _named(batch, names: Optional[Sequence[str]]) -> List[Tuple[str, np.ndarray]]:
    if isinstance(batch, Mapping):
        items = [(str(k), _as_numpy(v)) for k, v in batch.items()]
        if names is not None:
            missing = [n for n in names if n not in batch]
            if missing:
                raise ValueError("the loader's batch has keys %s; names=%s asks for %s" % (list(batch), list(names), missing))
            items = [(n, _as_numpy(batch[n])) for n in names]
        return items
    if isinstance(batch, (tuple, list)):
        arrays = [_as_numpy(v) for v in batch]
    else:
        arrays = [_as_numpy(batch)]
    if names is None:
        names = ("data", "label") if len(arrays) == 2 else tuple("t%d" % i for i in range(len(arrays)))
        if len(arrays) == 1:
            names = ("data",)
    if len(names) != len(arrays):
        raise ValueError("the loader yields %d tensors per batch but names=%s has %d" % (len(arrays), list(names), len(names)))
    return list(zip(names, arrays))


class _Connection:
    def __init__(self, path: Path, timeout: float):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))

    def send(self, mtype: int, payload: bytes = b""):
        self.sock.sendall(wire._HEADER.pack(wire.MAGIC, wire.VERSION, mtype, 0, len(payload)) + payload)

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ProducerFailed("the producer closed the feeder connection")
            buf += chunk
        return bytes(buf)

    def read(self):
        version, mtype, length = wire.decode_header(self._exact(wire.HEADER_BYTES))
        payload = self._exact(length)
        if version != wire.VERSION:
            e = wire.check_version(version, mtype, payload)
            raise FeederError(e.message)
        if mtype == wire.ERROR:
            e = wire.decode_payload(mtype, payload)
            raise FeederError(e.message)
        return mtype, payload

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _start_java_producer(name: str) -> Optional[subprocess.Popen]:
    exe = shutil.which("tensorsocket")
    if exe is None:
        return None
    return subprocess.Popen([exe, "serve", "--name", name, "--external"], stdout=subprocess.DEVNULL)


class TensorProducer:
    """Feeds ``loader`` into the Java producer called ``name`` for ``epochs`` epochs.

    ``loader`` is iterated once per epoch (a torch DataLoader reshuffles itself each time); it may yield
    tensors, tuples/lists or dicts of torch tensors or numpy arrays, with the batch dimension first. Tensor
    names come from dict keys or ``names`` (default ``("data", "label")`` for pairs). Samples per epoch come
    from ``len(loader.dataset)`` or ``samples_per_epoch``. When no producer of that name waits for a feeder
    and ``tensorsocket`` is on PATH, it is started (``start_producer=True``).

    Iterating the producer feeds one batch per step (like the reference implementation); :meth:`run`
    feeds every epoch.
    """

    def __init__(self, name: str, loader: Iterable[Any], epochs: int = 1, names: Optional[Sequence[str]] = None,
                 samples_per_epoch: Optional[int] = None, description: str = "", start_producer: bool = True,
                 connect_timeout: float = 60.0, batch_timeout: float = 600.0,
                 epoch_loader: Optional[Callable[[int], Iterable[Any]]] = None):
        if epochs < 1:
            raise ValueError("epochs must be at least 1, got %d" % epochs)
        self.name = name
        self.loader = loader
        self.epochs = epochs
        self.names = tuple(names) if names is not None else None
        self.description = description
        self._epoch_loader = epoch_loader or (lambda e: loader)
        self._samples_per_epoch = samples_per_epoch
        self._start_producer = start_producer
        self._connect_timeout = connect_timeout
        self._batch_timeout = batch_timeout
        self._process: Optional[subprocess.Popen] = None
        self._conn: Optional[_Connection] = None
        self._map = None
        self._arena = None
        self.batches_published = 0

    # -------------------------------------------------------------------------------- connecting

    def _connect(self) -> _Connection:
        path = directory_for(self.name) / FEEDER_SOCKET_FILE
        deadline = time.monotonic() + self._connect_timeout
        started = False
        while True:
            if path.exists():
                try:
                    return _Connection(path, self._connect_timeout)
                except OSError:
                    pass
            if not started and self._start_producer:
                self._process = _start_java_producer(self.name)
                started = True
            if self._process is None and not self._start_producer:
                pass
            if time.monotonic() > deadline:
                how = ("started `tensorsocket serve --name %s --external`, which did not open it" % self.name
                       if self._process is not None else
                       "start one: tensorsocket serve --name %s --external" % self.name)
                raise ProducerNotFound("no producer '%s' waits for a feeder (no %s within %.0f s); %s"
                                       % (self.name, path, self._connect_timeout, how))
            if self._process is not None and self._process.poll() is not None:
                raise ProducerNotFound("the producer started for '%s' exited with status %d before it took a feeder"
                                       % (self.name, self._process.returncode))
            time.sleep(0.05)

    def _declare(self, first: List[Tuple[str, np.ndarray]], batch_size: int, samples: int) -> None:
        p = struct.pack("<q", os.getpid()) + wire._string(" ".join(sys.argv)[:200] or "python3")
        p += struct.pack("<iqq", batch_size, samples, self.epochs) + wire._string(self.description)
        p += struct.pack("<H", len(first))
        for n, a in first:
            p += wire._string(n) + struct.pack("<BB", _dtype_code(a), a.ndim - 1)
            p += b"".join(struct.pack("<q", d) for d in a.shape[1:])
        self._conn.send(wire.FEEDER_HELLO, p)
        mtype, payload = self._conn.read()
        if mtype != wire.FEEDER_WELCOME:
            raise ProtocolError("the producer answered FEEDER_HELLO with message type %d" % mtype)
        r = wire._Reader(payload, mtype)
        self.producer_pid = r.take("<q")
        arena_path = r.string()
        self.claims_ahead = r.take("<i")
        fd = os.open(arena_path, os.O_RDWR)
        try:
            # Mapped once and populated now: first touch of a page is what costs, never per batch.
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            self._map = mmap.mmap(fd, os.fstat(fd).st_size, flags, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        if struct.unpack_from("<Q", self._map, 0)[0] != MAGIC:
            raise ProtocolError("%s is not a TensorSocket arena" % arena_path)
        self._arena = np.frombuffer(self._map, dtype=np.uint8)
        off = 0
        self._regions = []
        for n, a in first:
            sample_shape = a.shape[1:]
            dt = np.dtype(a.dtype).newbyteorder("<") if np.dtype(a.dtype).byteorder == ">" else np.dtype(a.dtype)
            nbytes = int(np.prod(sample_shape, dtype=np.int64)) * dt.itemsize * batch_size
            self._regions.append((n, off, nbytes, dt, sample_shape))
            off = _align_up(off + nbytes, REGION_ALIGN)

    # -------------------------------------------------------------------------------- feeding

    def __iter__(self) -> Iterator[int]:
        """Feeds every epoch; yields after each published batch (its sequence number)."""
        try:
            yield from self._feed()
        finally:
            self.close()

    def run(self) -> int:
        """Feeds every epoch; returns the number of batches published."""
        for _ in self:
            pass
        return self.batches_published

    def _feed(self) -> Iterator[int]:
        self._conn = self._connect()
        self._conn.sock.settimeout(self._batch_timeout)
        batch_size = None
        spe = self._samples_per_epoch
        spec = None
        for epoch in range(self.epochs):
            it = iter(self._epoch_loader(epoch))
            samples = 0
            for batch in it:
                tensors = _named(batch, self.names)
                n = len(tensors[0][1])
                if spec is None:
                    batch_size = getattr(self.loader, "batch_size", None) or n
                    if spe is None:
                        ds = getattr(self.loader, "dataset", None)
                        if ds is None or not hasattr(ds, "__len__"):
                            raise ValueError("give samples_per_epoch=: the loader has no dataset whose len() says it")
                        spe = len(ds)
                        if getattr(self.loader, "drop_last", False):
                            spe = spe // batch_size * batch_size
                    spec = [(nm, a.dtype, a.shape[1:]) for nm, a in tensors]
                    self._declare(tensors, batch_size, spe)
                self._check(tensors, spec, n, epoch)
                self._conn.send(wire.CLAIM)
                mtype, payload = self._conn.read()
                if mtype != wire.SLOT:
                    raise ProtocolError("the producer answered CLAIM with message type %d" % mtype)
                seq, offset = struct.unpack("<qq", payload)
                for (name, roff, nbytes, dt, shape), (_, a) in zip(self._regions, tensors):
                    view = self._arena[offset + roff: offset + roff + nbytes].view(dt).reshape((batch_size,) + shape)
                    np.copyto(view[:n], a, casting="no")
                self._conn.send(wire.PUBLISH, struct.pack("<qi", seq, n))
                samples += n
                self.batches_published += 1
                yield seq
            if spec is None:
                raise ValueError("the loader yielded no batch in epoch 0")
            self._conn.send(wire.FEEDER_EPOCH_END, struct.pack("<qq", epoch, samples))
            mtype, _ = self._conn.read()  # the producer took the epoch, or says (ERROR) why not
            if mtype != wire.FEEDER_EPOCH_END:
                raise ProtocolError("the producer answered FEEDER_EPOCH_END with message type %d" % mtype)

    def _check(self, tensors, spec, n, epoch):
        if len(tensors) != len(spec):
            self._refuse("a batch of epoch %d holds %d tensors, the first held %d" % (epoch, len(tensors), len(spec)))
        for (name, a), (sname, sdt, sshape) in zip(tensors, spec):
            if name != sname or a.dtype != sdt or a.shape[1:] != sshape or len(a) != n:
                self._refuse("tensor '%s' changed in epoch %d: %s %s where the declaration says '%s' %s %s"
                             % (name, epoch, a.dtype, tuple(a.shape[1:]), sname, sdt, tuple(sshape)))

    def _refuse(self, problem: str):
        msg = "feeder pid %d: %s" % (os.getpid(), problem)
        try:
            self._conn.send(wire.ERROR, struct.pack("<i", wire.BAD_REQUEST) + wire._string(msg[:1024]))
        except OSError:
            pass
        raise FeederError(msg)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._arena = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass
            self._map = None

    def wait_producer(self, timeout: Optional[float] = None) -> Optional[int]:
        """Waits for a producer this object started (if any) to finish serving; returns its exit status."""
        if self._process is None:
            return None
        return self._process.wait(timeout)


def feed(name: str, loader: Iterable[Any], epochs: int = 1, **options) -> int:
    """Feeds ``loader`` into producer ``name`` for ``epochs`` epochs; returns the batches published."""
    return TensorProducer(name, loader, epochs=epochs, **options).run()
