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
        # The arenas it reads as one range of slots: the producer's, then each lane's it was moved to.
        self._arenas = [(0, layout, arena_fd, arena_bytes)]
        self._next_slot = layout.slot_count

    def add_arena(self, layout, fd, arena_bytes):
        """A lane's arena (``layout``, open as ``fd``, mapped as ``arena_bytes``): the number its first slot gets."""
        base = self._next_slot
        self._arenas.append((base, layout, fd, arena_bytes))
        self._next_slot += layout.slot_count
        return base

    def _locate(self, slot):
        for base, layout, fd, arena_bytes in reversed(self._arenas):
            if slot >= base:
                return layout, fd, arena_bytes, slot - base
        raise ValueError("slot %d lies in no arena" % slot)

    def assemble(self, plan, on_release, views):
        """The batch of ``plan``; ``on_release(pinned seq or -1)`` runs once when it is released. A zero-copy batch
        records the SlotMap its arrays view in ``views`` (seq -> SlotMap)."""
        n = plan.samples
        arrays = {}
        layout = self._layout
        single = plan.pieces[0] if plan.single else None
        regions = None
        if single is not None:
            sm = self._slotmap(single.slot)
            views[single.seq] = sm
            lay, fd, _bytes, local = self._locate(single.slot)
            regions = {}
            for t, spec in enumerate(self._specs):
                off = layout.region_offsets[t] + single.offset * self._sample_bytes[t]
                arrays[spec.name] = sm.view(self._np_dtypes[t], n * self._numel[t], off, (n,) + spec.shape)
                regions[spec.name] = (fd, lay.slot_offset(local) + off)
        else:
            buf = self._gather.take()
            for t, spec in enumerate(self._specs):
                sb = self._sample_bytes[t]
                g = self._gather_offsets[t]
                for p in plan.pieces:
                    lay, _fd, arena_bytes, local = self._locate(p.slot)
                    src = lay.slot_offset(local) + layout.region_offsets[t] + p.offset * sb
                    dst = g + p.dest_offset * sb
                    buf[dst:dst + p.samples * sb] = arena_bytes[src:src + p.samples * sb]
                arr = buf[g:g + n * sb].view(self._np_dtypes[t]).reshape((n,) + spec.shape)
                arr.flags.writeable = False
                arrays[spec.name] = arr
        pinned = single.seq if single is not None else -1
        return Batch(arrays, plan.epoch, plan.index, plan.sample_start, n, lambda: on_release(pinned), self._bf16,
                     regions)

    def _slotmap(self, slot):
        sm = self._slotmaps.get(slot)
        if sm is None:
            lay, fd, _bytes, local = self._locate(slot)
            sm = SlotMap(fd, lay.slot_offset(local), lay.slot_bytes)
            self._slotmaps[slot] = sm
        return sm

    def forget(self, sm):
        """``sm`` was detached (its pages copied for the arrays still held): the next batch of its slot maps anew."""
        for slot, mapped in list(self._slotmaps.items()):
            if mapped is sm:
                del self._slotmaps[slot]

    def close(self):
        for sm in self._slotmaps.values():
            if sm.in_use():
                sm.detach()
            sm.close()
        self._slotmaps.clear()
        self._arena_bytes = None
        self._arenas = []
