"""A batch handed to the caller, local or remote: named arrays that are valid until the batch is released."""

import warnings
from typing import Any, Dict, List

import numpy as np

from .errors import BatchReleasedError

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

    __slots__ = ("epoch", "index", "sample_start", "size", "_arrays", "_on_release", "_label", "_bf16", "_regions")

    def __init__(self, arrays, epoch, index, sample_start, size, on_release, bf16=frozenset(), regions=None):
        self._arrays = arrays
        self._regions = regions
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

    def file_region(self, name):
        """``(fd, offset)``: where tensor ``name``'s bytes lie in an arena file this process has open, for a batch that
        views one slot of it (another process reads them there, through ``/proc/<pid>/fd/<fd>``, while the batch is
        held); None for a batch gathered from several slots or received over the network."""
        self._live()
        return None if self._regions is None else self._regions.get(name)

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
