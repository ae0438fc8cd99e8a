"""Map-style data sets fed by index: the producer chooses each epoch's order (so consumers that join mid-epoch
still get exact epochs) and the feeder loads exactly those samples, with PyTorch's own DataLoader and its worker
processes, batch size, collate function and drop-last.

A torch ``DataLoader`` over a map-style data set (``__getitem__`` and ``__len__``) with its default sampler
(``shuffle=True`` or ``False``) and automatic batching is fed this way without any change to the call; any other
loader (an ``IterableDataset``, a custom sampler or batch sampler, a plain iterable) keeps its own order, and
consumers that join it mid-epoch roll. One DataLoader of the same settings serves the whole feed, its sampler given
each epoch's order, so ``persistent_workers`` keeps its workers across epochs.
"""

import os
from typing import Any, List, Optional, Sequence

import numpy as np

from ._decoded import DecodedCollate, DecodedSamples, PackedLoad, RowRing, in_place, lists_files, row_width
from ._decoded_cache import CachedDataset, CachedLoad, DecodedCache, loads
from ._loader_workers import ending_with_this_process, stop_workers

FORESEEN_AT_MOST = 1 << 18
"""The largest data set whose epoch 0 the feeder draws itself, ahead of its producer: a larger one would take Python
longer to draw than the producer's start it overlaps."""

_COPIED = ("num_workers", "collate_fn", "pin_memory", "timeout", "worker_init_fn", "multiprocessing_context",
           "prefetch_factor", "generator", "persistent_workers")


class _Order:
    """The sampler of the feeder's DataLoader: the producer's order of the epoch being fed (set before each)."""

    def __init__(self):
        self.ids: Sequence[int] = ()

    def __iter__(self):
        return iter(self.ids)

    def __len__(self):
        return len(self.ids)


class MapStyle:
    """What the feeder needs to load epochs of ``loader``'s data set by index."""

    def __init__(self, loader, seed: Optional[int], cache_mb: Optional[float] = None, decoded: bool = False,
                 decoded_bytes: Optional[int] = None):
        import torch.utils.data as tud
        self.dataset = loader.dataset
        self.cache: Optional[DecodedCache] = None
        self.rows: Optional[RowRing] = None  # where a decoded feed's workers put a batch's rows (``_decoded.RowRing``)
        self.batch_size = loader.batch_size
        self.drop_last = bool(loader.drop_last)
        self.shuffle = isinstance(loader.sampler, tud.RandomSampler)
        self.seed = int.from_bytes(os.urandom(8), "little") >> 1 if seed is None else int(seed)
        self._options = {k: getattr(loader, k) for k in _COPIED if hasattr(loader, k)}
        if self._options.get("num_workers", 0) == 0:
            self._options.pop("prefetch_factor", None)
            self._options.pop("persistent_workers", None)
        self._order = _Order()
        self._loader = None
        self.size = len(self.dataset)
        if self.size < 1:
            raise ValueError("the loader's data set is empty")
        if self.drop_last and self.size < self.batch_size:
            raise ValueError("drop_last with batch size %d leaves nothing of %d samples" % (self.batch_size, self.size))
        if cache_mb is not None:
            context = self._options.get("multiprocessing_context")
            method = context if context is None or isinstance(context, str) else context.get_start_method()
            if self._options.get("num_workers", 0) > 0 and method not in (None, "fork"):
                raise ValueError("cache_mb shares the kept samples with the loader's workers by fork; this loader's "
                                 "multiprocessing_context is %r: leave it out (or give 'fork') to use cache_mb"
                                 % (method,))
        self._decoded = decoded
        if decoded:
            self._serve_decoded(cache_mb, decoded_bytes)
        elif cache_mb is not None:
            self.dataset = CachedDataset(self.dataset, int(float(cache_mb) * (1 << 20)))
            self.cache = self.dataset.cache

    def _serve_decoded(self, cache_mb: Optional[float], decoded_bytes: Optional[int]) -> None:
        """Loads the samples with the data set's transform off and carries them in rows (``_decoded``), for trials
        that augment them themselves; the loader's collate function gives way to the rows' (the trials collate)."""
        if self._options.get("collate_fn") not in (None, self._default_collate()):
            raise ValueError("augment= has each trial collate its augmented samples (SampleAugment(..., collate=)); "
                             "the factory's loader has a collate function of its own (%s): leave it out of the loader "
                             "and give it to SampleAugment" % getattr(self._options["collate_fn"], "__name__", "?"))
        raw = loads(self.dataset)
        sized_by = 1 if decoded_bytes is not None or lists_files(self.dataset) else min(self.batch_size, self.size)
        width = row_width(self.dataset, [self._first_field(raw(i)) for i in range(sized_by)], decoded_bytes)
        load: Any = PackedLoad(raw)
        if cache_mb is not None:
            self.cache = DecodedCache(int(float(cache_mb) * (1 << 20)), self.size)
            load = CachedLoad(load, self.cache, copy=False)  # the rows' collation only reads what is kept
        self.dataset = DecodedSamples(load, self.size)
        workers = int(self._options.get("num_workers", 0))
        if workers > 0:  # the batches the loader has outstanding, the one the feeder holds, and one to spare
            slots = workers * int(self._options.get("prefetch_factor") or 2) + 2
            self.rows = RowRing(slots, self.batch_size, width)
        self._options["collate_fn"] = DecodedCollate(width, self.rows)

    @staticmethod
    def _first_field(item: Any) -> Any:
        return item[0] if isinstance(item, (tuple, list)) else item

    @staticmethod
    def of(loader, exact_epochs: Optional[bool], seed: Optional[int], cache_mb: Optional[float] = None,
           decoded: bool = False, decoded_bytes: Optional[int] = None) -> Optional["MapStyle"]:
        """The map-style view of ``loader``, or None where it keeps its own order. ``exact_epochs``: None
        decides by the loader; True requires it (ValueError saying why not); False never. ``cache_mb``: keep
        decoded samples across epochs (``_decoded_cache``), which needs the loader fed by index. ``decoded``: serve the
        samples with the data set's transform off, in rows (``_decoded``), for trials that augment them themselves;
        ``decoded_bytes`` the bytes of a row (default: sized from the data set)."""
        if decoded:
            why = "is fed in its own order (exact_epochs=False)" if exact_epochs is False else MapStyle._why_not(loader)
            if why is not None:
                raise ValueError("augment= serves a torch DataLoader's map-style data set by index, its samples "
                                 "decoded, for each trial to augment; this loader %s" % why)
            return MapStyle(loader, seed, cache_mb, decoded, decoded_bytes)
        if exact_epochs is False:
            if cache_mb is not None:
                raise ValueError("cache_mb keeps samples of a data set fed by index; exact_epochs=False feeds the "
                                 "loader in its own order")
            return None
        why = MapStyle._why_not(loader)
        if why is None:
            return MapStyle(loader, seed, cache_mb)
        if cache_mb is not None:
            raise ValueError("cache_mb keeps samples of a torch DataLoader's map-style data set, fed by index; this "
                             "loader %s" % why)
        if exact_epochs:
            raise ValueError("exact_epochs=True needs a torch DataLoader over a map-style data set with its default "
                             "sampler (shuffle=True or False) and a batch size; this loader %s" % why)
        return None

    @staticmethod
    def _why_not(loader) -> Optional[str]:
        try:
            import torch.utils.data as tud
        except ImportError:
            return "cannot be read by index without torch"
        if not isinstance(loader, tud.DataLoader):
            return "is a %s, not a torch DataLoader" % type(loader).__name__
        if isinstance(loader.dataset, tud.IterableDataset):
            return "reads an IterableDataset, which has no index"
        if loader.batch_size is None:
            return "has automatic batching turned off (batch_size=None)"
        if not isinstance(loader.sampler, (tud.RandomSampler, tud.SequentialSampler)):
            return "has a sampler of its own (%s)" % type(loader.sampler).__name__
        if type(loader.batch_sampler) is not tud.BatchSampler:
            return "has a batch sampler of its own (%s)" % type(loader.batch_sampler).__name__
        if isinstance(loader.sampler, tud.RandomSampler) and (loader.sampler.replacement
                                                               or loader.sampler._num_samples is not None):
            return "samples with replacement or a number of samples of its own"
        try:
            len(loader.dataset)
        except TypeError:
            return "reads a data set without len()"
        return None

    def samples_per_epoch(self) -> int:
        return self.size // self.batch_size * self.batch_size if self.drop_last else self.size

    def first_order(self) -> Optional[List[int]]:
        """Epoch 0's order as the producer will draw it from this feed's seed (the exact-epoch rule's first epoch:
        ``stream.chunked_first`` with ``stream.epoch_random``, or ``0..n-1`` unshuffled), so that the loader can start
        on it before the producer answers; the producer's order is still asked for, and is the one that counts. None
        where the feeder does not foresee it: over :data:`FORESEEN_AT_MOST` samples, or with a collate function of the
        loader's own, whose batches only a probe of a whole batch shows."""
        collate = self._options.get("collate_fn")
        if self.size > FORESEEN_AT_MOST or not (collate in (None, self._default_collate())
                                                or isinstance(collate, DecodedCollate)):
            return None
        if not self.shuffle:
            order = list(range(self.size))
        else:
            from .stream import chunked_first, epoch_random
            order = chunked_first(self.size, epoch_random(self.seed, 0))
        return order[:self.samples_per_epoch()]

    @staticmethod
    def _default_collate():
        import torch.utils.data as tud
        return tud.default_collate

    def probe(self, samples: Optional[int] = None) -> Any:
        """The first ``samples`` of the data set (default: a batch) in index order, collated as the loader would:
        what the feeder declares (loaded once more, in this process, before the first epoch). One sample serves where
        the collate function is the default, which stacks samples."""
        collate = self._options.get("collate_fn") or self._default_collate()
        batch, slot = self.in_place(collate([self.dataset[i] for i in range(min(samples or self.batch_size, self.size))]))
        if slot >= 0:
            batch = dict(batch, **{k: np.array(v) for k, v in batch.items() if isinstance(v, np.ndarray)})
            self.rows_copied(slot)
        return batch

    def lane_loader(self) -> "LaneLoader":
        """A DataLoader of this loader's settings over the ids it is given: one of its own, with worker processes of
        its own, for a lane's batches beside the main ones (``_lane_feeder``). The workers of both end with the feeder
        (``_loader_workers``)."""
        return LaneLoader(self)

    def loader(self, order: Sequence[int]):
        """The DataLoader that yields the samples ``order`` names, in that order, in batches of the batch size: one
        for the whole feed, whose sampler is given each epoch's order, so persistent workers stay (until
        :meth:`close`)."""
        self._order.ids = order
        if self._loader is not None and self._copies_only() and self._options.get("num_workers", 0) > 0:
            stop_workers(self._loader)  # a loader in this process from now on: see _copies_only
            if self.rows is not None:
                self.rows.reset()  # whatever the ended workers held is free
            self._loader = None
            self._options = dict(self._options, num_workers=0)
            self._options.pop("prefetch_factor", None)
            self._options.pop("persistent_workers", None)
        if self._loader is None:
            self._loader = self._new_loader(self._order)
        return self._loader

    def _copies_only(self) -> bool:
        """Whether loading a batch is copying kept rows and nothing more: decoded samples, all of them in the cache.
        Then worker processes would only add their hand-over (each batch through fresh shared memory) to the copy."""
        return self._decoded and self.cache is not None and self.cache.holds_all()

    def has_workers(self) -> bool:
        """Whether the loader runs worker processes (a loader in the feeder's own process has nothing to stop)."""
        return int(self._options.get("num_workers", 0)) > 0

    def pause(self, held: Sequence[int] = ()) -> None:
        """No consumer is attached: the loader's workers kept between epochs end now (those of an epoch's iterator end
        with it), and the row buffers they held are free but ``held`` (the batch the feeder has in hand)."""
        if self._loader is not None:
            stop_workers(self._loader)
        if self.rows is not None:
            self.rows.reset(held)

    def close(self) -> None:
        """The main stream ended: the workers the loader keeps between epochs end now."""
        if self._loader is not None:
            stop_workers(self._loader)

    def _new_loader(self, sampler: "_Order", own_rows: bool = True):
        """A DataLoader of the loader's settings over ``sampler``; one not ``own_rows`` (a lane's) collates decoded
        rows into tensors of its own, outside the ring of the main loader's."""
        import torch.utils.data as tud
        options = self._options
        collate = options.get("collate_fn")
        if not own_rows and isinstance(collate, DecodedCollate):
            options = dict(options, collate_fn=collate.plain())
        return tud.DataLoader(self.dataset, batch_size=self.batch_size, sampler=sampler, drop_last=False,
                              **ending_with_this_process(options))

    def in_place(self, batch: Any):
        """``(batch, slot)``: a batch of the main loader's with its rows viewing the ring buffer that holds them, and
        the buffer to give back (:meth:`rows_copied`) once they are in the arena; ``slot`` -1 where there is none."""
        return in_place(batch, self.rows)

    def rows_copied(self, slot: int) -> None:
        if slot >= 0 and self.rows is not None:
            self.rows.give(slot)


class LaneLoader:
    """A lane connection's DataLoader (``MapStyle.lane_loader``): called with a lane epoch's ids, it gives the loader
    over them; :meth:`close` ends the workers it keeps between epochs when the connection ends."""

    def __init__(self, ix: MapStyle):
        self._order = _Order()
        self._loader = ix._new_loader(self._order, own_rows=False)

    def __call__(self, ids: Sequence[int]):
        self._order.ids = ids
        return self._loader

    def close(self) -> None:
        stop_workers(self._loader)
