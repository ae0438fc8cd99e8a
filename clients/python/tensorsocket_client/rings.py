"""A consumer's end of its descriptor ring in the producer's rings file: the producer hands it each stream event
(a batch, an epoch's end, the stream's end) as one entry, without a socket write, and wakes it through a futex
while it sleeps (docs/PROTOCOL.md, section 4a).

The file's layout is the Java ``RingLayout``'s, where it is drawn; ``docs/test-vectors/rings-header.txt`` pins
it for both languages. The words are read and written as aligned 32- and 64-bit values through ctypes, each one
load or store, which x86-64 and aarch64 keep whole; the ordering the protocol needs is the futex call's: the
consumer stores ``parked`` and then the kernel reads ``doorbell`` behind a full barrier, while the producer adds
to ``doorbell`` atomically and then reads ``parked``, so a wake-up cannot be lost (a waiting consumer still looks
again at least every ``PARK_S``).
"""

import ctypes
import mmap
import os
import platform
import struct

from .errors import ProtocolError

MAGIC = 0x3153474E49525354  # "TSRINGS1" read little-endian
VERSION = 1
ENTRY_BYTES = 64
HEADER_BYTES = 64
RING_HEADER_BYTES = 128
_HEADER = struct.Struct("<QIIqII")  # magic, version, rings, sessionId, capacity, entryBytes
OWNER, DOORBELL, TAIL, CURSOR, PARKED = 0, 4, 8, 64, 72
PARK_S = 0.1  # the longest one sleep on the doorbell lasts before the consumer looks again

_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98}.get(platform.machine().lower(), -1)
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc = None


def supported():
    """Whether this platform has futexes this module can call (Linux on x86-64 or aarch64)."""
    return _SYS_FUTEX >= 0 and os.uname().sysname == "Linux"


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc.syscall


def futex_wait(address, expected, timeout_s):
    """Sleeps while the 32-bit word at ``address`` holds ``expected``, at most ``timeout_s`` (the GIL let go)."""
    ts = _Timespec(int(timeout_s), int((timeout_s - int(timeout_s)) * 1e9))
    _syscall()(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(address), ctypes.c_long(_FUTEX_WAIT),
               ctypes.c_long(expected), ctypes.byref(ts), ctypes.c_void_p(None), ctypes.c_long(0))


def futex_wake(address):
    _syscall()(ctypes.c_long(_SYS_FUTEX), ctypes.c_void_p(address), ctypes.c_long(_FUTEX_WAKE),
               ctypes.c_long(0x7FFFFFFF), ctypes.c_void_p(None), ctypes.c_void_p(None), ctypes.c_long(0))


def header_problem(head, size, session_id):
    """What is wrong with a rings file's header for session ``session_id``, or None (RingLayout.problem's twin)."""
    magic, version, rings, session, capacity, entry_bytes = _HEADER.unpack_from(head)
    if magic != MAGIC:
        return "it is not a TensorSocket rings file (bad magic)"
    if version != VERSION:
        return "rings layout version %d, this client reads version %d" % (version, VERSION)
    if session != session_id:
        return "it belongs to another producer session"
    if (rings < 1 or capacity < 4 or capacity & (capacity - 1) or entry_bytes != ENTRY_BYTES
            or size < HEADER_BYTES + rings * (RING_HEADER_BYTES + capacity * ENTRY_BYTES)):
        return "its geometry is invalid"
    return None


class RingTaken(Exception):
    """The producer gave this consumer's ring to another consumer: it detached this one."""


class RingReader:
    """Consumer ``owner``'s end of ring ``index`` of the rings file at ``path``: takes entries in order (``poll``),
    sleeps on the doorbell (``park``). One thread takes; another may ``knock`` (the link's receiver, on news)."""

    def __init__(self, path, session_id, index, owner):
        fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_BYTES:
                raise ProtocolError("rings file %s is %d bytes, smaller than its header" % (path, size))
            head = os.pread(fd, HEADER_BYTES, 0)
            problem = header_problem(head, size, session_id)
            if problem is not None:
                raise ProtocolError("rings file %s does not match the producer's announcement: %s" % (path, problem))
            _, _, rings, _, capacity, _ = _HEADER.unpack_from(head)
            if not 0 <= index < rings:
                raise ProtocolError("ring %d outside the %d rings of this producer" % (index, rings))
            self._mm = mmap.mmap(fd, HEADER_BYTES + rings * (RING_HEADER_BYTES + capacity * ENTRY_BYTES))
        finally:
            os.close(fd)
        self.capacity = capacity
        self.owner = owner
        self._base = HEADER_BYTES + index * (RING_HEADER_BYTES + capacity * ENTRY_BYTES)
        b = self._base
        self._owner = ctypes.c_int32.from_buffer(self._mm, b + OWNER)
        self._doorbell = ctypes.c_int32.from_buffer(self._mm, b + DOORBELL)
        self._tail = ctypes.c_int64.from_buffer(self._mm, b + TAIL)
        self._cursor = ctypes.c_int64.from_buffer(self._mm, b + CURSOR)
        self._parked = ctypes.c_int32.from_buffer(self._mm, b + PARKED)
        self._doorbell_at = ctypes.addressof(self._doorbell)
        self._head = 0

    def ready(self):
        """Whether an entry waits to be taken."""
        return self._tail.value != self._head

    def poll(self):
        """The next entry's 64 bytes, or None if none is published; RingTaken if the ring serves someone else."""
        tail = self._tail.value
        if tail == self._head:
            self._check_owner()
            return None
        if tail < self._head or tail - self._head > self.capacity:
            self._check_owner()
            raise ProtocolError("descriptor ring holds %d entries, more than its %d; the producer broke its protocol"
                                % (tail - self._head, self.capacity))
        at = self._entry(self._head)
        entry = self._mm[at:at + ENTRY_BYTES]
        self._check_owner()  # after the entry was read: an entry of the ring's next owner is never taken
        self._head += 1
        self._cursor.value = (self.owner << 32) | (self._head & 0xFFFFFFFF)
        return entry

    def unread(self):
        """The entries not yet taken, each 64 bytes; takes nothing."""
        tail = self._tail.value
        if tail < self._head or tail - self._head > self.capacity:
            return []
        return [self._mm[self._entry(k):self._entry(k) + ENTRY_BYTES] for k in range(self._head, tail)]

    def _entry(self, k):
        return self._base + RING_HEADER_BYTES + (k & (self.capacity - 1)) * ENTRY_BYTES

    def _check_owner(self):
        now = self._owner.value
        if now != self.owner:
            raise RingTaken("this consumer's descriptor ring now serves consumer %d: the producer detached this "
                            "consumer" % now)

    def doorbell(self):
        """The doorbell's value now: read before looking for entries, then pass it to ``park``."""
        return self._doorbell.value

    def park(self, seen, timeout_s):
        """Sleeps until the doorbell differs from ``seen``, at most ``timeout_s``; spurious returns happen."""
        self._parked.value = 1
        try:
            futex_wait(self._doorbell_at, seen, min(timeout_s, PARK_S))
        finally:
            self._parked.value = 0

    def knock(self):
        """Moves the doorbell and wakes a sleeping taker (news on the socket). Not atomic against the producer's
        adds, which is enough: a sleeper waits for the word to differ from what it read, and any store makes it
        differ or is followed by the producer's own wake-up."""
        try:
            self._doorbell.value = (self._doorbell.value + 1) & 0x7FFFFFFF
        except AttributeError:
            return  # closed meanwhile: nobody sleeps on it any more
        futex_wake(self._doorbell_at)

    def close(self):
        # The ctypes views export the mapping's buffer: they go first, or mmap refuses to close.
        self._owner = self._doorbell = self._tail = self._cursor = self._parked = None
        self._mm.close()
