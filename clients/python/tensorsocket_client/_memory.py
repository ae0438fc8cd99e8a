"""Memory behind the arrays a consumer hands out, and how it stays valid after a batch is released.

Zero-copy batches are numpy views of a per-slot read-only mapping of the arena. A slot is released to
the producer only when no array, view or tensor made from that mapping is alive any more (CPython
reference counts tell exactly). If arrays are still alive when the consumer must let the slot go, the
mapping is *detached*: its pages are replaced, at the same addresses, by a private copy of their
contents, so every outstanding array keeps the bytes it had and never sees the producer's next batch.
Gathered batches live in consumer-owned buffers that are reused only when nothing references them.
"""

import ctypes
import ctypes.util
import mmap
import sys

import numpy as np

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MAP_FAILED = ctypes.c_void_p(-1).value
_MAP_FIXED = 0x10
_MAP_ANONYMOUS = getattr(mmap, "MAP_ANONYMOUS", 0x20)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


HUGE_PAGE = 2 << 20


def _address(mm, offset=0):
    probe = np.frombuffer(mm, dtype=np.uint8, count=1, offset=offset)
    return probe.ctypes.data


def detach(mm, start: int, size: int, writable: bool) -> None:
    """Replaces ``size`` bytes of mapping ``mm`` from ``start``, in place (at the same addresses), by a private copy of
    their current bytes, so every array viewing them keeps those bytes whatever the shared memory holds next."""
    snapshot = mm[start:start + size]  # a copy, taken while the memory is still as the arrays saw it
    addr = _address(mm, start)
    got = _libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_FIXED, -1, 0)
    if got is None or got == _MAP_FAILED or got != addr:
        raise OSError(ctypes.get_errno(), "could not detach a held batch from shared memory")
    ctypes.memmove(addr, snapshot, size)
    if not writable and _libc.mprotect(addr, size, mmap.PROT_READ) != 0:
        raise OSError(ctypes.get_errno(), "could not protect a detached batch")


class FileMapping:
    """A shared mapping of ``length`` bytes of a file from ``offset``, its pages faulted in up front, that
    numpy arrays can view: ``mm[start:start + length]`` are the file's bytes.

    The mapping lies at an address congruent to its file offset modulo 2 MiB, so that where the producer
    keeps the arena in 2 MiB pages this process maps them whole, as the producer does, rather than through
    4 KiB page-table entries. Mechanism: ``mm`` is an anonymous mapping 2 MiB longer than the file's span,
    and the file is mapped over the right part of it (``MAP_FIXED``); closing ``mm`` unmaps both."""

    __slots__ = ("mm", "start", "length")

    def __init__(self, fd, length, offset, writable=False):
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        mm = mmap.mmap(-1, length + HUGE_PAGE, flags=mmap.MAP_PRIVATE | _MAP_ANONYMOUS, prot=prot)
        try:
            base = _address(mm)
            start = (offset - base) % HUGE_PAGE
            want = base + start
            got = _libc.mmap(want, length, prot, mmap.MAP_SHARED | _MAP_FIXED | _POPULATE, fd, offset)
            if got is None or got == _MAP_FAILED or got != want:
                raise OSError(ctypes.get_errno(), "could not map %d bytes of the arena at offset %d"
                              % (length, offset))
        except BaseException:
            mm.close()
            raise
        self.mm, self.start, self.length = mm, start, length

    def address(self):
        return _address(self.mm, self.start)

    def bytes(self):
        """The file's bytes as a numpy uint8 array (read-only unless mapped writable)."""
        return np.frombuffer(self.mm, dtype=np.uint8, count=self.length, offset=self.start)

    def close(self):
        self.mm.close()


class SlotMap:
    """One read-only mapping of one arena slot, shared by every batch that lies in that slot."""

    __slots__ = ("mapping", "mm", "size", "_baseline")

    def __init__(self, fd, offset, size):
        self.mapping = FileMapping(fd, size, offset)
        self.mm = self.mapping.mm
        self.size = size
        self._baseline = sys.getrefcount(self.mm)

    def in_use(self):
        """Whether any array (or view, or tensor) made from this mapping is still alive."""
        return sys.getrefcount(self.mm) > self._baseline

    def view(self, dtype, count, offset, shape):
        return np.frombuffer(self.mm, dtype=dtype, count=count, offset=self.mapping.start + offset).reshape(shape)

    def detach(self):
        """Replaces the mapping's pages, in place, by a private read-only copy of their current bytes."""
        start = self.mapping.start
        detach(self.mm, start, self.size, writable=False)

    def close(self):
        """Unmaps if nothing uses the mapping; a mapping still in use is left to its arrays."""
        if not self.in_use():
            try:
                self.mm.close()
            except BufferError:
                pass


class GatherPool:
    """Consumer-owned buffers for batches that span slots; a buffer is reused only when unreferenced."""

    def __init__(self, nbytes, keep=2):
        self.nbytes = max(1, nbytes)
        self.keep = keep
        self.bufs = []
        self.bufs.append(np.empty(1, dtype=np.uint8))
        self._baseline = sys.getrefcount(self.bufs[0])
        self.bufs.clear()

    def take(self):
        for i in range(len(self.bufs)):
            if sys.getrefcount(self.bufs[i]) <= self._baseline:
                return self.bufs[i]
        buf = np.empty(self.nbytes, dtype=np.uint8)
        buf.fill(0)  # fault the pages in now rather than while copying
        if len(self.bufs) < self.keep:
            self.bufs.append(buf)
        return buf
