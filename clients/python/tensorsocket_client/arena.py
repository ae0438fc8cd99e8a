"""The arena file's layout, as specified in docs/PROTOCOL.md: the header, and where each slot and each
tensor's region lie. The only place the client computes those offsets."""

import struct

from .dtypes import DTYPES
from .errors import ProtocolError, ProtocolVersionError

MAGIC = 0x31414E4552415354  # "TSARENA1" read little-endian
LAYOUT_VERSION = 1
HEADER_BYTES = 4096
PAGE = 4096
REGION_ALIGN = 64

_HEADER = struct.Struct("<QIIqqIIqI")


def _align_up(v, a):
    return (v + a - 1) // a * a


def sample_bytes(spec):
    n = 1
    for d in spec.shape:
        n *= d
    return n * DTYPES[spec.dtype][1].itemsize


def region_offsets(sample_sizes, batch_size):
    """Where each tensor's region starts in a slot of ``batch_size`` samples of the given sample sizes, and
    where the last one ends: regions follow one another, each aligned to REGION_ALIGN."""
    offsets = []
    off = 0
    for sb in sample_sizes:
        offsets.append(off)
        off = _align_up(off + sb * batch_size, REGION_ALIGN)
    return offsets, off


class Layout:
    """Slot geometry: where each tensor's region starts inside a slot, and where each slot starts."""

    def __init__(self, tensors, batch_size, slot_count):
        self.tensors = tensors
        self.batch_size = batch_size
        self.slot_count = slot_count
        self.sample_bytes = [sample_bytes(t) for t in tensors]
        self.region_offsets, off = region_offsets(self.sample_bytes, batch_size)
        self.slot_bytes = max(PAGE, _align_up(off, PAGE))

    @property
    def file_bytes(self):
        return HEADER_BYTES + self.slot_bytes * self.slot_count

    def slot_offset(self, slot):
        return HEADER_BYTES + self.slot_bytes * slot

    def verify_header(self, header: bytes, session_id: int):
        """None if the arena header matches what the producer announced, else what differs."""
        if len(header) < HEADER_BYTES:
            return "the file is %d bytes, smaller than an arena header" % len(header)
        magic, version, _hb, session, _pid, slots, tensors, slot_bytes, batch = _HEADER.unpack_from(header, 0)
        if magic != MAGIC:
            return "the file is not a TensorSocket arena (bad magic)"
        if version != LAYOUT_VERSION:
            raise ProtocolVersionError("arena layout version %d, this library reads version %d"
                                       % (version, LAYOUT_VERSION))
        if session != session_id:
            return "the arena belongs to another producer session (the producer was restarted)"
        if (slots != self.slot_count or slot_bytes != self.slot_bytes or batch != self.batch_size
                or tensors != len(self.tensors)):
            return "the arena's slot geometry differs from what the producer announced"
        return None


def header_problem(layout, header, session_id, path):
    problem = layout.verify_header(header, session_id)
    if problem is not None:
        raise ProtocolError("arena %s does not match the producer's announcement: %s" % (path, problem))
