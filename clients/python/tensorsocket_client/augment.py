"""A trial's own augmentation of what a shared loader serves: trials that augment differently still share one
loading (decoding, resizing) of every sample, and each gets what its own private pipeline would give it.

    from tensorsocket_client import share
    from tensorsocket_client.augment import SampleAugment   # not imported by tensorsocket_client: it imports torch
    aug = SampleAugment(my_transform, seed=7)               # what this trial would give ImageFolder(transform=)
    loader = share("photos", "loaders:photos", batch_size=64, augment=aug)   # loaders.photos: the private DataLoader
    for epoch in range(epochs):
        for images, labels in loader:                       # as the private loader yields them
            ...

The producer serves the factory's data set's samples with the data set's transform off (torchvision's convention, a
``transform`` attribute; or its ``load(i)``; see ``_decoded_cache``): ``ImageFolder`` gives each whole decoded image,
whatever its size, which the trial's transform gets as a PIL image, as its private ``ImageFolder`` would give it. The
transform runs in worker processes of the trial's own, ahead of the loop (``workers``: by default as many as the
factory's loader has), one sample at a time, and the samples are collated (``collate``: torch's ``default_collate``
by default, as a DataLoader's). The batches are the data set's fields with the first one augmented, as the private
loader yields them.

Over a producer that serves tensors rather than decoded samples (one a share() without ``augment`` did not start),
the batches must carry each sample's id (its index in the data set) in one field (``ids``, the last by default), as
a data set that returns ``(image, label, index)`` does (:class:`Indexed` makes one of any map-style data set); the
transform is applied to field ``field`` (the first by default), the other fields passing through.

**Randomness.** A sample's transform runs with torch's default (CPU) generator seeded from ``(seed, epoch, id)``
(:func:`sample_seed`), where ``epoch`` counts this trial's own epochs from 0; the generator's state around it is
kept and restored. So a sample's augmentation in a trial's epoch does not depend on where in the epoch it came, on
the batch size, on the worker that ran it, or on who else reads the producer, and the same ``SampleAugment`` over a
private data set (:meth:`SampleAugment.over`) gives the same tensors, sample for sample: that is the private pipeline
a shared trial equals. Transforms that draw from Python's ``random`` or numpy's generator are not seeded by it.
"""

from typing import Any, Callable, Optional, Sequence, Tuple

import torch
from torch.utils.data import default_collate

from ._decoded_cache import loads

_MASK = (1 << 64) - 1


def _mix(z: int) -> int:
    """splitmix64's finaliser: a 64-bit value whose bits each depend on all of ``z``'s."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def sample_seed(seed: int, epoch: int, sample_id: int) -> int:
    """The seed of sample ``sample_id``'s augmentation in epoch ``epoch`` under ``seed``: a non-negative 63-bit
    integer, the same in every process and on every host."""
    return _mix(_mix(_mix(seed & _MASK) ^ (epoch & _MASK)) ^ (sample_id & _MASK)) >> 1


class SampleAugment:
    """``transform`` applied to each sample's first field, seeded per sample (see the module's doc): over a shared
    loader's batches (``share(..., augment=this)``) or over a data set (:meth:`over`). ``workers``: the processes that
    run it for a shared loader (None: as many as the factory's loader has; 0: in the training process);
    ``prefetch_factor``: batches each worker prepares ahead; ``collate``: how a batch's augmented samples are collated
    (torch's ``default_collate`` by default). ``field`` and ``ids``: over a producer that serves tensors, which field
    to augment and which holds the sample ids."""

    def __init__(self, transform: Callable[[Any], Any], seed: int = 0, field: int = 0, ids: int = -1,
                 workers: Optional[int] = None, prefetch_factor: int = 2,
                 collate: Optional[Callable[[Any], Any]] = None):
        if not callable(transform):
            raise TypeError("SampleAugment needs a callable transform (a sample in, a tensor out), got %r"
                            % (transform,))
        if workers is not None and int(workers) < 0:
            raise ValueError("SampleAugment's workers are 0 (in the training process) or more, not %r" % (workers,))
        if int(prefetch_factor) < 1:
            raise ValueError("SampleAugment's prefetch_factor is 1 or more batches a worker prepares ahead, not %r"
                             % (prefetch_factor,))
        self.transform = transform
        self.seed = int(seed)
        self.field = field
        self.ids = ids
        self.workers = None if workers is None else int(workers)
        self.prefetch_factor = int(prefetch_factor)
        self.collate = collate or default_collate

    def sample(self, x: Any, epoch: int, sample_id: int) -> Any:
        """``transform(x)`` as sample ``sample_id`` of epoch ``epoch`` gets it."""
        with torch.random.fork_rng(devices=[]):
            return self.seeded(x, epoch, sample_id)

    def seeded(self, x: Any, epoch: int, sample_id: int) -> Any:
        """:meth:`sample` without keeping the generator's state around it: for a caller that keeps it around many
        samples (a worker's task)."""
        # torch's CPU generator alone: torch.manual_seed also queues a seeding of every CUDA device, with a traceback
        # of the call, in a process that has not initialised CUDA (a DataLoader worker), which cost more than many
        # transforms and grew a list per sample
        torch.default_generator.manual_seed(sample_seed(self.seed, epoch, sample_id))
        return self.transform(x)

    def batch(self, batch: Sequence[torch.Tensor], epoch: int) -> Tuple[torch.Tensor, ...]:
        """``batch`` (a tuple of tensors, one row per sample) with field ``field`` augmented per sample, by the ids
        in field ``ids``; the transform gets each sample as a copy of its own, and the augmented field is the
        trial's, not a view of shared memory."""
        if not isinstance(batch, (tuple, list)):
            raise TypeError("augment= needs the shared loader's batches as tuples of tensors (share() without names= "
                            "or with names= listing the fields), got %s" % type(batch).__name__)
        fields = list(batch)
        try:
            data, ids = fields[self.field], fields[self.ids]
        except IndexError:
            raise ValueError("augment= reads field %d (the data) and field %d (the sample ids) of each batch, which has "
                             "%d fields" % (self.field, self.ids, len(fields))) from None
        if (not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.dtype.is_floating_point
                or ids.dtype == torch.bool or len(ids) != len(data)):
            raise ValueError("augment= needs each sample's id (its index in the data set) in field %d of the shared "
                             "loader's batches: one integer per sample, as a data set returning (image, label, index) "
                             "gives; that field holds %s" % (self.ids, _describe(ids)))
        with torch.random.fork_rng(devices=[]):
            out = []
            for row, sample_id in zip(data, ids.tolist()):
                out.append(self.seeded(row.clone(), epoch, sample_id))  # its own copy: a transform may work in place
        fields[self.field] = torch.stack(out)
        return tuple(fields)

    def over(self, dataset: Any) -> "AugmentedDataset":
        """A map-style data set: sample ``i`` of ``dataset`` as loaded with its transform off (the whole decoded image
        of an ``ImageFolder``, whatever its ``transform``), field ``field`` augmented as sample ``i``: the private
        pipeline a trial sharing a loader with this augmentation equals. Call its ``set_epoch(e)`` before each
        epoch."""
        return AugmentedDataset(dataset, self)


class Indexed(torch.utils.data.Dataset):
    """A map-style data set's samples with their index as one more field: ``(*dataset[i], i)`` (``(dataset[i], i)``
    for a sample that is not a tuple), the ids a shared loader's batches carry for :class:`SampleAugment`."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Tuple[Any, ...]:
        item = self.dataset[index]
        return (*item, index) if isinstance(item, (tuple, list)) else (item, index)


class AugmentedDataset(torch.utils.data.Dataset):
    """A data set whose samples are another's, augmented by a :class:`SampleAugment` in the epoch set last (0 at
    first). DataLoader workers see the epoch set before the loader's iteration began (workers that persist across
    epochs do not: set ``persistent_workers=False``)."""

    def __init__(self, dataset: Any, augment: SampleAugment):
        self.dataset = dataset
        self.augment = augment
        self.epoch = 0
        self._load = loads(dataset)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        item = self._load(index)
        sample = list(item) if isinstance(item, (tuple, list)) else [item]
        sample[self.augment.field] = self.augment.sample(sample[self.augment.field], self.epoch, int(index))
        return tuple(sample) if isinstance(item, (tuple, list)) else sample[0]


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return "a %s tensor of shape %s" % (str(x.dtype).replace("torch.", ""), tuple(x.shape))
    return type(x).__name__
