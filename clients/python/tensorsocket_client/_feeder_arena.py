"""An arena file as a feeder writes into it: mapped read-write once (its pages touched up front: first touch is what
costs, never per batch), each slot's tensors as numpy arrays made once per slot, where the slot layout (``arena.py``)
puts them. The producer's arena and a lane's (the same slot layout, fewer slots) alike."""

import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._memory import FileMapping
from .arena import MAGIC, Layout
from .errors import ProtocolError

Region = Tuple[str, int, int, np.dtype, Tuple[int, ...]]  # name, offset in a slot, bytes, dtype, sample shape


def regions_of(tensors, first: Sequence[Tuple[str, np.ndarray]], batch_size: int) -> List[Region]:
    """Where each tensor of the declared batches (``tensors``, shown by the batch ``first``) lies in a slot."""
    layout = Layout(tensors, batch_size, 1)
    regions = []
    for (n, a), off, sb in zip(first, layout.region_offsets, layout.sample_bytes):
        dt = np.dtype(a.dtype).newbyteorder("<") if np.dtype(a.dtype).byteorder == ">" else np.dtype(a.dtype)
        regions.append((n, off, sb * batch_size, dt, tuple(a.shape[1:])))
    return regions


class FeederArena:
    """The arena file ``path``, mapped for writing batches of ``batch_size`` samples laid out as ``regions`` say."""

    def __init__(self, path: str, regions: List[Region], batch_size: int):
        fd = os.open(path, os.O_RDWR)
        try:
            self.inode = os.fstat(fd).st_ino
            self._map: Optional[FileMapping] = FileMapping(fd, os.fstat(fd).st_size, 0, writable=True)
        finally:
            os.close(fd)
        self.path = path
        self._bytes = self._map.bytes()
        if self._bytes[:8].view("<u8")[0] != MAGIC:
            self.close()
            raise ProtocolError("%s is not a TensorSocket arena" % path)
        self._regions = regions
        self._batch_size = batch_size
        self._views: Dict[int, list] = {}

    def views(self, offset: int) -> list:
        """The tensors' arrays in the slot at ``offset`` of the file, made once per slot."""
        views = self._views.get(offset)
        if views is None:
            views = [self._bytes[offset + roff: offset + roff + nbytes].view(dt).reshape((self._batch_size,) + shape)
                     for _, roff, nbytes, dt, shape in self._regions]
            self._views[offset] = views
        return views

    def close(self) -> None:
        """Unmaps it; arrays still alive keep the mapping until they go."""
        self._views = {}
        self._bytes = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass
            self._map = None
