"""Keeps the C allocator from handing a remote stream's message buffers back to the kernel between batches.

gRPC gathers a Flight message that arrived in pieces into one buffer: it allocates about a batch's bytes, copies
the pieces in, and frees the buffer once the batch is decoded, for every batch. glibc serves an allocation above
its mmap threshold with fresh pages from the kernel and returns them on free, and trims its heap once more than
its trim threshold lies free at the top; both thresholds start at 128 KiB and move only by glibc's own rules.
When they end up below a batch's bytes, each batch's buffer is new memory, and touching new memory costs a page
fault per page: for 0.8 MB batches most of a Python trainer's CPU per batch, and a fraction of the rate
(docs/benchmarks.md, "A Python trainer over Flight"). Raising both above a batch's bytes lets the buffer one
batch freed serve the next.

The thresholds are the process's (glibc has one set), so this only raises them, never lowers them: the mmap
threshold to the larger of a batch's bytes and gRPC's largest read buffer (4 MiB), plus a margin; the trim threshold
to 64 MiB or four such messages, whichever is more, because gRPC may hold tens of MB of a stream in flight and free
them together. That bounds what each of the allocator's arenas keeps free for reuse. A batch above glibc's limit
for the mmap threshold (32 MiB) would still be mapped afresh every time, so for one the allocator stops mapping
blocks of its own (``M_MMAP_MAX`` 0): every block then comes from its heaps (where a heap cannot grow, glibc still
maps). Nothing is changed where the user set ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or
``MALLOC_MMAP_MAX_`` (their choice stands), where ``TENSORSOCKET_MALLOC_TUNING=0``, or where the C library is not
glibc.
"""

import ctypes
import functools
import os
import threading
from typing import Optional, Tuple

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
MAX_MMAP_THRESHOLD = 32 << 20  # glibc refuses more on 64-bit systems
MARGIN = 64 << 10  # message headers, validity bitmaps, gRPC framing
GRPC_READ_CHUNK = 4 << 20  # the most gRPC reads from a socket into one buffer (its default max read chunk size)
KEPT_FREE = 64 << 20  # the least trim threshold: gRPC may hold tens of MB of a stream in flight, then free them at once
KEPT_MESSAGES = 4  # and at least room for this many messages

_lock = threading.Lock()
_raised_to = 0


def why_not() -> Optional[str]:
    """Why the thresholds are left alone here, or None if they may be raised."""
    if os.environ.get("TENSORSOCKET_MALLOC_TUNING", "1") == "0":
        return "TENSORSOCKET_MALLOC_TUNING=0"
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_"):
        if name in os.environ:
            return "%s is set" % name
    if _libc() is None:
        return "the C library is not glibc"
    return None


def keep_for(batch_bytes: int) -> Optional[Tuple[int, int]]:
    """Raises the thresholds for messages of ``batch_bytes``; returns the (mmap, trim) thresholds now set by this
    module, mmap 0 where the allocator stops mapping blocks of its own (messages above glibc's limit for the mmap
    threshold), or None where they are left alone (see :func:`why_not`) or were already as high."""
    global _raised_to
    if why_not() is not None:
        return None
    need = max(GRPC_READ_CHUNK, int(batch_bytes)) + MARGIN
    with _lock:
        if need <= _raised_to:
            return None
        libc = _libc()
        trim = max(KEPT_FREE, KEPT_MESSAGES * need)
        if need <= MAX_MMAP_THRESHOLD:
            mmap, done = need, libc.mallopt(M_MMAP_THRESHOLD, need)
        else:
            mmap, done = 0, libc.mallopt(M_MMAP_MAX, 0)
        if not (done and libc.mallopt(M_TRIM_THRESHOLD, trim)):
            return None
        _raised_to = need
        return mmap, trim


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return None  # not glibc: its allocator has other knobs
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    return libc
