"""Decoded samples kept across epochs for a feeder (``TensorProducer(..., cache_mb=N)``, ``share(..., cache_mb=N)``):
each sample of a map-style data set is loaded (read and decoded) once per sweep, and only its augmentation runs every
epoch, in the loader's worker processes as before.

What is kept is the sample as the data set gives it with its augmentation off, so an augmentation run on a kept sample
gets the same input, and gives the same bytes, as on a fresh load. Two forms of data set are understood:

* torchvision's convention: a ``transform`` attribute that ``__getitem__`` applies to the sample (to the first element
  of a tuple such as ``(image, target)``), as ``ImageFolder``, ``DatasetFolder`` and many others do. A sample is
  loaded with ``transform`` set to None, and ``transform`` is applied to the kept sample.
* two functions of the data set's own: ``load(i)`` (what to keep) and ``augment(sample)`` (what runs every epoch).

A sample is kept the first time it is loaded while room is left, and never evicted: a data set larger than the cache
keeps what fits and loads the rest every epoch (evicting would make every sample miss in turn over shuffled epochs).

The memory is one anonymous shared mapping made before the loader's worker processes start, which they inherit by
fork (a ``multiprocessing_context`` other than fork is refused): nothing is left on a file system when the feeder is
killed. Its layout::

    0                8               16               24               32               40
    +----------------+----------------+----------------+----------------+----------------+
    | bytes used     | samples held   | hits           | loads          | full (0 or 1)  |   counters (u64)
    +----------------+----------------+----------------+----------------+----------------+
    64: entries, one per sample of the data set, 16 bytes each:
    +--------------------------------+--------------------------------+
    | offset in the data (u64)       | length (u64; 0: not kept)      |
    +--------------------------------+--------------------------------+
    then the data: each kept sample's pickle (protocol 5), its out-of-band buffers after it:
    +-----------+-------------------+-----------------+-----------+-----+-----------+
    | count u32 | lengths u64 x ... | pickle bytes    | buffer 1  | ... | buffer n  |
    +-----------+-------------------+-----------------+-----------+-----+-----------+

Counters and entries change under one lock shared with the workers (a semaphore inherited by fork); a sample's data
is written before its entry, and read only after its entry was read under the lock, so a reader never sees a sample
half written. A kept sample is never written again. A process that misses a sample while room is left claims it (its
entry's offset all ones, its length 0) and loads it; the others wait for it rather than load it too, so each sample
is loaded and stored once.
"""

import contextlib
import logging
import mmap
import multiprocessing
import pickle
import struct
import time
from typing import Any, Callable, Iterator, List, Optional, Tuple

_log = logging.getLogger("tensorsocket_client")

_COUNTERS = 64
_ENTRY = 16
_USED, _HELD, _HITS, _LOADS, _FULL = 0, 8, 16, 24, 32
_LOADING = (1 << 64) - 1
"""An entry's offset while a process loads its sample (its length still 0): the others wait for it."""


def available_memory() -> int:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or -1 where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return -1


def split(dataset) -> Tuple[Callable[[int], Any], Callable[[Any], Any]]:
    """``(load, augment)`` of ``dataset`` (see the module's doc), found through the wrappers that keep the data set
    they wrap as ``dataset`` (``Indexed``, torch's ``Subset``); ValueError saying what is needed where it has neither
    form."""
    load, augment = getattr(dataset, "load", None), getattr(dataset, "augment", None)
    if callable(load) and callable(augment):
        return load, augment
    if hasattr(dataset, "transform"):
        convention = _Convention(dataset)
        return convention.load, convention.augment
    wrapper = _wrapper(dataset)
    if wrapper is not None:
        return wrapper
    raise ValueError("cache_mb keeps samples of a data set that applies a `transform` attribute in __getitem__ (as "
                     "torchvision's ImageFolder does), or that defines load(i) (what to keep) and augment(sample) "
                     "(what runs every epoch); %s has neither" % type(dataset).__name__)


def loads(dataset) -> Callable[[int], Any]:
    """How to load sample ``i`` of ``dataset`` with its transform off (``split``'s load), or ``dataset[i]`` itself
    for a data set of neither form: it has no transform to turn off."""
    try:
        return split(dataset)[0]
    except ValueError:
        return dataset.__getitem__


def _wrapper(dataset) -> Optional[Tuple[Callable[[int], Any], Callable[[Any], Any]]]:
    """``(load, augment)`` of an ``Indexed`` or ``Subset`` over a data set of either form, or None."""
    inner = getattr(dataset, "dataset", None)
    if inner is None:
        return None
    try:
        from torch.utils.data import Subset

        from .augment import Indexed
    except ImportError:
        return None
    if isinstance(dataset, Indexed):
        indexed = _IndexedForm(*split(inner))
        return indexed.load, indexed.augment
    if isinstance(dataset, Subset):
        load, augment = split(inner)
        return _SubsetLoad(load, dataset.indices), augment
    return None


class _SubsetLoad:
    """``Subset``'s sample ``i``: the inner data set's sample ``indices[i]``, loaded by the inner form."""

    def __init__(self, load: Callable[[int], Any], indices: Any):
        self._load, self._indices = load, indices

    def __call__(self, i: int) -> Any:
        return self._load(self._indices[i])


class _IndexedForm:
    """``Indexed``'s samples, ``(*inner, i)``, loaded and augmented by the inner data set's form."""

    def __init__(self, load: Callable[[int], Any], augment: Callable[[Any], Any]):
        self._load, self._augment = load, augment

    def load(self, i: int) -> Any:
        item = self._load(i)
        return (*item, i) if isinstance(item, (tuple, list)) else (item, i)

    def augment(self, sample: Any) -> Any:
        rest = tuple(sample[:-1])
        inner = self._augment(rest if len(rest) > 1 else rest[0])
        return (*inner, sample[-1]) if isinstance(inner, (tuple, list)) else (inner, sample[-1])


class _Convention:
    """torchvision's convention: ``dataset[i]`` with ``transform`` off, then ``transform`` on the kept sample."""

    def __init__(self, dataset):
        self.dataset = dataset

    def load(self, i: int) -> Any:
        transform = self.dataset.transform
        self.dataset.transform = None  # one loading at a time in a process: the loader's workers are processes
        try:
            return self.dataset[i]
        finally:
            self.dataset.transform = transform

    def augment(self, sample: Any) -> Any:
        transform = self.dataset.transform
        if transform is None:
            return sample
        if isinstance(sample, tuple):
            return (transform(sample[0]),) + sample[1:]
        if isinstance(sample, list):
            return [transform(sample[0])] + sample[1:]
        return transform(sample)


class DecodedCache:
    """At most ``capacity`` bytes of kept samples for a data set of ``samples`` samples (see the module's doc)."""

    LOAD_WAIT = 10.0
    """Seconds a process waits for a sample that another is loading before it loads the sample itself (the other
    may have died loading it)."""

    LOCK_TIMEOUT = 30.0
    """Seconds to wait for the lock, which is held for microseconds: longer means a process died holding it."""

    def __init__(self, capacity: int, samples: int):
        if capacity <= 0:
            raise ValueError("cache_mb holds more than 0 MiB, not %r; leave it out to load every sample every epoch"
                             % (capacity / (1 << 20),))
        available = available_memory()
        if available > 0 and capacity > available:
            raise ValueError("a decoded-sample cache of %d MiB does not fit: this machine has %d MiB of memory "
                             "available; give cache_mb=%d or less (what does not fit is loaded every epoch)"
                             % (capacity >> 20, available >> 20, max(1, (available >> 20) * 3 // 4)))
        self.capacity = capacity
        self.samples = samples
        self._data = _COUNTERS + _ENTRY * samples
        self._map = mmap.mmap(-1, self._data + capacity, flags=mmap.MAP_SHARED)
        self._lock = multiprocessing.get_context("fork").Lock()
        self._epoch_start = (0, 0)  # hits and loads when the epoch being fed began

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=self.LOCK_TIMEOUT):
            raise RuntimeError("the decoded-sample cache's lock was not released within %g s: a loader worker process "
                               "died holding it; restart the feed (or leave cache_mb out)" % self.LOCK_TIMEOUT)
        try:
            yield
        finally:
            self._lock.release()

    def __getstate__(self):
        raise TypeError("the decoded-sample cache reaches the loader's workers by fork only; give the DataLoader "
                        "multiprocessing_context='fork' (or none) to use cache_mb")

    def get(self, i: int, copy: bool = True) -> Optional[Any]:
        """Sample ``i`` as kept (a copy of it; ``copy=False``: its arrays read-only views of the cache, for a caller
        that only reads them), or None where the caller is to load it (and ``offer`` or ``abandon`` it): a sample
        that another process is loading is waited for (up to :data:`LOAD_WAIT`), so that each sample is loaded once
        while room is left."""
        deadline = None
        while True:
            with self._locked():
                offset, length = struct.unpack_from("<QQ", self._map, _COUNTERS + _ENTRY * i)
                if length:
                    self._add(_HITS, 1)
                    break
                if offset != _LOADING or (deadline is not None and time.monotonic() > deadline):
                    if offset != _LOADING and not self._counter(_FULL):
                        struct.pack_into("<Q", self._map, _COUNTERS + _ENTRY * i, _LOADING)  # this caller loads it
                    self._add(_LOADS, 1)
                    return None
            if deadline is None:
                deadline = time.monotonic() + self.LOAD_WAIT
            time.sleep(0.001)
        at = self._data + offset
        (count,) = struct.unpack_from("<I", self._map, at)
        lengths = struct.unpack_from("<%dQ" % (count + 1), self._map, at + 4)
        at += 4 + 8 * (count + 1)
        kept = memoryview(self._map).toreadonly()  # a kept sample is never written again
        data = kept[at:at + lengths[0]]
        at += lengths[0]
        buffers: List[Any] = []
        for n in lengths[1:]:
            buffers.append(bytearray(kept[at:at + n]) if copy else kept[at:at + n])
            at += n
        return pickle.loads(data, buffers=buffers)

    def abandon(self, i: int) -> None:
        """The caller that was to load sample ``i`` could not (its load raised): others load it themselves."""
        with self._locked():
            self._unclaim(i)

    def _unclaim(self, i: int) -> None:
        at = _COUNTERS + _ENTRY * i
        if struct.unpack_from("<QQ", self._map, at) == (_LOADING, 0):
            struct.pack_into("<Q", self._map, at, 0)

    def offer(self, i: int, sample: Any) -> bool:
        """Keeps sample ``i`` where it is not kept yet and room is left; whether it is kept now."""
        buffers: List[pickle.PickleBuffer] = []
        data = pickle.dumps(sample, protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
        lengths = [len(data)] + [r.nbytes for r in raws]
        head = struct.pack("<I%dQ" % len(lengths), len(raws), *lengths)
        size = len(head) + sum(lengths)
        with self._locked():
            used = self._counter(_USED)
            if struct.unpack_from("<Q", self._map, _COUNTERS + _ENTRY * i + 8)[0]:
                return False
            if used + size > self.capacity:
                self._full()
                self._unclaim(i)
                return False
            struct.pack_into("<Q", self._map, _USED, used + size)  # the entry stays claimed until the data is in
        at = self._data + used
        self._map[at:at + len(head)] = head
        at += len(head)
        self._map[at:at + len(data)] = data
        at += len(data)
        for r in raws:
            self._map[at:at + r.nbytes] = r.cast("B")
            at += r.nbytes
        with self._locked():
            struct.pack_into("<QQ", self._map, _COUNTERS + _ENTRY * i, used, size)
            self._add(_HELD, 1)
        return True

    def _full(self) -> None:
        if not self._counter(_FULL):
            struct.pack_into("<Q", self._map, _FULL, 1)
            _log.warning("the decoded-sample cache is full (%d MiB, %d of %d samples kept): the others are loaded "
                         "every epoch; a larger cache_mb keeps more", self.capacity >> 20, self._counter(_HELD),
                         self.samples)

    def _counter(self, at: int) -> int:
        return struct.unpack_from("<Q", self._map, at)[0]

    def _add(self, at: int, n: int) -> None:
        struct.pack_into("<Q", self._map, at, self._counter(at) + n)

    def holds_all(self) -> bool:
        """Whether every sample of the data set is kept."""
        with self._locked():
            return self._counter(_HELD) == self.samples

    def counts(self) -> Tuple[int, int, int, int]:
        """``(bytes used, samples held, hits, loads)`` so far, across all processes."""
        with self._locked():
            return (self._counter(_USED), self._counter(_HELD), self._counter(_HITS), self._counter(_LOADS))

    def epoch_line(self, epoch: int) -> str:
        """What the cache holds and did in epoch ``epoch`` (since the previous call), for the feeder's log."""
        used, held, hits, loads = self.counts()
        line = ("epoch %d: the decoded-sample cache holds %d of %d samples (%.1f of %d MiB); %d hits, %d loads"
                % (epoch, held, self.samples, used / (1 << 20), self.capacity >> 20, hits - self._epoch_start[0],
                   loads - self._epoch_start[1]))
        self._epoch_start = (hits, loads)
        return line


class CachedLoad:
    """``load(i)`` through ``cache``: a kept sample is read from it (``copy=False``: its arrays viewing the cache,
    read-only), any other loaded and offered to it."""

    def __init__(self, load: Callable[[int], Any], cache: DecodedCache, copy: bool = True):
        self._load = load
        self.cache = cache
        self._copy = copy

    def __call__(self, i: int) -> Any:
        sample = self.cache.get(i, self._copy)
        if sample is not None:
            return sample
        try:
            sample = self._load(i)
            self.cache.offer(i, sample)
        except BaseException:
            self.cache.abandon(i)  # the others load it themselves rather than wait for it
            raise
        return sample


class CachedDataset:
    """``dataset`` whose samples are kept, once loaded, in a cache of at most ``capacity`` bytes (see the module's
    doc); a data set of neither form is refused before the cache's memory is taken. ``augmented=False`` gives the
    kept samples as loaded (for trials that augment them themselves, ``_decoded``)."""

    def __init__(self, dataset, capacity: int, augmented: bool = True):
        self.dataset = dataset
        load, self._augment = split(dataset)
        if not augmented:
            self._augment = _as_loaded
        self.cache = DecodedCache(capacity, len(dataset))
        self.load = CachedLoad(load, self.cache)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> Any:
        return self._augment(self.load(i))


def _as_loaded(sample: Any) -> Any:
    return sample
