"""Turns a consumer's batch plan into the Batch handed out (the Java BatchAssembly's twin): a plan inside one
slot becomes read-only numpy views of that slot's own mapping (zero copy; ``_memory.SlotMap`` keeps arrays the
caller still holds valid after the slot goes back), one that spans slots is gathered into this consumer's
buffer, piece by piece, in order."""

import numpy as np

from . import arena as _arena
from ._memory import GatherPool, SlotMap
from .batch import Batch
from .dtypes import BFLOAT16, DTYPES


class BatchAssembly:
    def __init__(self, layout, arena_fd, arena_bytes, batch_size):
        """For the arena of ``layout``, open as ``arena_fd`` and mapped as ``arena_bytes``, and batches of up to
        ``batch_size`` samples."""
        self._layout = layout
        self._fd = arena_fd
        self._arena_bytes = arena_bytes
        self._specs = layout.tensors
        self._np_dtypes = [DTYPES[t.dtype][1] for t in layout.tensors]
        self._numel = [int(np.prod(t.shape, dtype=np.int64)) for t in layout.tensors]
        self._sample_bytes = layout.sample_bytes
        self._gather_offsets, end = _arena.region_offsets(self._sample_bytes, batch_size)
        self._gather = GatherPool(end)
        self._bf16 = frozenset(t.name for t in layout.tensors if t.dtype == BFLOAT16)
        self._slotmaps = {}

    def assemble(self, plan, on_release, views):
        """The batch of ``plan``; ``on_release(pinned seq or -1)`` runs once when it is released. A zero-copy batch
        records the SlotMap its arrays view in ``views`` (seq -> SlotMap)."""
        n = plan.samples
        arrays = {}
        layout = self._layout
        single = plan.pieces[0] if plan.single else None
        if single is not None:
            sm = self._slotmap(single.slot)
            views[single.seq] = sm
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
        return Batch(arrays, plan.epoch, plan.index, plan.sample_start, n, lambda: on_release(pinned), self._bf16)

    def _slotmap(self, slot):
        sm = self._slotmaps.get(slot)
        if sm is None:
            sm = SlotMap(self._fd, self._layout.slot_offset(slot), self._layout.slot_bytes)
            self._slotmaps[slot] = sm
        return sm

    def forget(self, slot, sm):
        """``sm`` was detached (its pages copied for the arrays still held): the next batch of ``slot`` maps anew."""
        if self._slotmaps.get(slot) is sm:
            del self._slotmaps[slot]

    def close(self):
        for sm in self._slotmaps.values():
            if sm.in_use():
                sm.detach()
            sm.close()
        self._slotmaps.clear()
        self._arena_bytes = None
