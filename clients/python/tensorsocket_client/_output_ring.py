"""Where a trial's augmentation workers put the augmented samples, and where its loop reads them without a copy.

A ring of slots, each a batch of augmented samples (``(b, *sample shape)`` of one dtype) in a memory file of its own
(``memfd``), mapped shared by the trial's process and, inherited by fork, by its workers; each slot is made and its
pages touched once. A worker writes sample ``k`` of its task into row ``k`` of the task's slot; the loop gets a tensor
that views the slot. A slot is written again only for the task ``slots`` after it, and before that task goes out the
trial's process looks whether any tensor (or view, or array) of the slot's last batch is still alive (CPython's
reference counts on the slot's mapping tell): if so, the mapping's pages are replaced, at the same addresses, by a
private copy (``_memory.detach``), so what the loop kept keeps its bytes, and the slot is mapped anew from its file.
A loop that drops each batch for the next never copies::

    slot i (memfd i)    row 0 | row 1 | ... | row b-1        each row: one augmented sample, C order
    ring                slot 0 | slot 1 | ... | slot R-1      R = workers x prefetch_factor + 2

Two slots beyond the tasks outstanding: the task sent as the loop receives batch j writes batch j - 2's slot, which a
``for`` loop has let go by then (it holds batch j - 1 until the assignment of j).
"""

import mmap
import os
import sys
from typing import List, Tuple

import numpy as np
import torch

from ._memory import detach


class OutputRing:
    """``slots`` slots of ``shape`` (the batch size first) and torch dtype ``dtype`` (see the module's doc)."""

    def __init__(self, slots: int, shape: Tuple[int, ...], dtype: torch.dtype):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._np = np.dtype(np.int16) if dtype == torch.bfloat16 else torch.empty(0, dtype=dtype).numpy().dtype
        self.nbytes = max(1, int(np.prod(self.shape, dtype=np.int64)) * self._np.itemsize)
        self._fds: List[int] = []
        self._maps: List[mmap.mmap] = []
        self.detached = 0
        try:
            for i in range(slots):
                fd = os.memfd_create("tensorsocket-augmented-%d" % i)
                self._fds.append(fd)
                os.ftruncate(fd, self.nbytes)
                self._maps.append(self._map(fd))
        except BaseException:
            self.close()
            raise
        self._baseline = sys.getrefcount(self._maps[0])

    def _map(self, fd: int) -> mmap.mmap:
        mm = mmap.mmap(fd, self.nbytes)
        np.frombuffer(mm, dtype=np.uint8).fill(0)  # its pages faulted in now, once
        return mm

    def batch(self, slot: int, n: int = -1) -> torch.Tensor:
        """Slot ``slot`` as a tensor (its first ``n`` rows), viewing the shared memory."""
        a = np.frombuffer(self._maps[slot], dtype=self._np).reshape(self.shape)
        t = torch.from_numpy(a if n < 0 else a[:n])
        return t.view(torch.bfloat16) if self.dtype == torch.bfloat16 else t

    def reuse(self, slot: int) -> None:
        """Before slot ``slot`` is written again: what still views its last batch keeps a private copy."""
        if sys.getrefcount(self._maps[slot]) > self._baseline:
            detach(self._maps[slot], 0, self.nbytes, writable=True)
            self._maps[slot] = mmap.mmap(self._fds[slot], self.nbytes)  # the slot's memory, mapped anew
            self.detached += 1

    def close(self) -> None:
        """Closes the slots' files; a mapping that tensors still view is left to them."""
        for mm in self._maps:
            try:
                mm.close()
            except BufferError:
                pass
        for fd in self._fds:
            os.close(fd)
        self._maps, self._fds = [], []
