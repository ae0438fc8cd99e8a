"""A trial's own augmentation of a shared stream, in worker processes of its own ahead of the training loop, as its
private ``DataLoader`` would run it: the loop only takes ready batches.

The workers are a torch ``DataLoader``'s (its worker start, prefetching, ordering, and its errors: a transform's
exception reaches the loop with the worker's traceback, a worker's death as an error naming it). Its sampler runs in
the trial's process and reads the consumer: each consumer batch's augmented field is copied into a slot of a staging
ring in shared memory (made and touched once, before the workers start), the batch is released, and the task
``(slot, samples, epoch, shapes, other fields, ids)`` goes to a worker, which turns each row back into the sample
(``_decoded.unpack``: the decoded image; or the tensor row), applies the transform seeded per sample
(``SampleAugment.sample``) and collates. A slot is written again only after its task's batch was handed to the loop:
the DataLoader keeps at most ``workers x prefetch_factor`` tasks outstanding and hands them out in order, and the
ring has that many slots::

    staging ring (uint8, shared)   slot 0 | slot 1 | ... | slot P-1        P = workers x prefetch_factor (1 without)
    slot                           row 0 | row 1 | ... | row b-1           b = the consumer's batch size
    row                            one sample's augmented field, its bytes as the producer serves them
"""

from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from . import _decoded
from .errors import TensorSocketError


class AugmentWorkerDied(TensorSocketError):
    """A worker process of this trial's augmentation ended without a result (killed, crashed, out of memory). Where the
    death is noticed outside the loop's wait for a batch (torch tells of it by SIGCHLD, in whatever the trial's process
    runs then), it is torch's RuntimeError naming the worker, as with a private DataLoader."""


class _Plan:
    """Which of a consumer batch's tensors a trial's batches are made of (``fields``, in order), which one is augmented
    (``fields[at]``), which holds the sample ids, and how a row of the augmented one becomes the sample: decoded rows
    (``_decoded``: the shapes travel with each task) or rows of one dtype and shape."""

    def __init__(self, tensors: Sequence[Tuple[str, str, Sequence[int]]], augment: Any,
                 names: Optional[Sequence[str]]):
        spec = {n: (dt, tuple(shape)) for n, dt, shape in tensors}
        self.decoded = _decoded.is_decoded(list(spec))
        if self.decoded:
            self.fields = _decoded.sample_fields(list(spec))
            self.at, self.ids = 0, _decoded.IDS
            self.row: Optional[Tuple[str, Tuple[int, ...]]] = None
        else:
            if names is None:
                raise ValueError("augment= over a producer that serves tensors (not decoded samples) needs names= "
                                 "(the fields, in order)")
            self.fields = list(names)
            try:
                self.at, self.ids = augment.field % len(self.fields), self.fields[augment.ids]
            except IndexError:
                raise ValueError("augment= reads field %d (the data) and field %d (the sample ids) of each batch, "
                                 "which has %d fields" % (augment.field, augment.ids, len(self.fields))) from None
            dtype, shape = spec[self.fields[self.at]]
            if spec[self.ids][1] or not spec[self.ids][0].startswith(("int", "uint")):
                raise ValueError("augment= needs each sample's id (its index in the data set) in field %d of the "
                                 "shared loader's batches: one integer per sample, as a data set returning (image, "
                                 "label, index) gives; that field holds %s %s" % (augment.ids, spec[self.ids][0],
                                                                               spec[self.ids][1]))
            self.row = (dtype, shape)
        name = self.fields[self.at]
        self.row_bytes = int(np.prod(spec[name][1], dtype=np.int64)) * np.dtype(
            "u2" if spec[name][0] == "bfloat16" else spec[name][0]).itemsize
        self.others = [f for i, f in enumerate(self.fields) if i != self.at]


class _Tasks:
    """The DataLoader's sampler, in the trial's process: the stage's tasks of the epoch being read."""

    def __init__(self, stage: "AugmentStage"):
        self.stage = stage

    def __iter__(self) -> Iterator[Tuple[Any, ...]]:
        return self.stage.tasks()


class _Augmenting(Dataset):
    """What a worker runs for a task: the staged rows back into samples, each augmented, collated."""

    def __init__(self, augment: Any, staging: torch.Tensor, plan: _Plan):
        self.augment = augment
        self.staging = staging
        self.row_bytes = plan.row_bytes
        self.row = plan.row
        self.at = plan.at

    def __getitem__(self, task: Tuple[Any, ...]) -> Any:
        slot, n, epoch, heads, others, ids = task
        rows = self.staging[slot].numpy()[:n * self.row_bytes].reshape(n, self.row_bytes)
        samples = []
        for k in range(n):
            if self.row is None:
                x = _decoded.unpack(rows[k], heads[k])
            else:
                dtype, shape = self.row
                x = torch.from_numpy(rows[k].view(dtype).reshape(shape).copy())
            fields = [torch.from_numpy(np.array(o[k])) for o in others]
            fields.insert(self.at, self.augment.sample(x, epoch, int(ids[k])))
            samples.append(tuple(fields))
        return self.augment.collate(samples)

    def __len__(self) -> int:
        raise TypeError("a sampler of tasks drives it")


class AugmentStage:
    """``augment`` of ``consumer``'s batches in ``workers`` processes (0: in this process), ``prefetch_factor`` batches
    each ahead; :meth:`epoch` gives one epoch of augmented batches, tuples of the fields as the trial's private loader
    would give them. The workers stay across epochs, until :meth:`close`."""

    def __init__(self, consumer: Any, augment: Any, workers: int, names: Optional[Sequence[str]] = None):
        self.consumer = consumer
        self.plan = _Plan(consumer.tensors, augment, names)
        workers = int(workers)
        if workers < 0:
            raise ValueError("augmentation workers are 0 or more, not %d" % workers)
        prefetch = int(augment.prefetch_factor)
        slots = workers * prefetch if workers > 0 else 1
        size = max(1, len_or(consumer)) * self.plan.row_bytes
        self.staging = torch.zeros((slots, size), dtype=torch.uint8)
        if workers > 0:
            self.staging.share_memory_()  # the workers' input, touched once here
        self._slots = slots
        self._next_slot = 0
        self._epoch = 0
        options: Dict[str, Any] = dict(num_workers=workers, persistent_workers=workers > 0)
        if workers > 0:
            options["prefetch_factor"] = prefetch
        self._loader: Optional[DataLoader] = DataLoader(_Augmenting(augment, self.staging, self.plan), batch_size=None,
                                                        sampler=_Tasks(self), **options)
        self.workers = workers

    def epoch(self, epoch: int) -> Iterator[Any]:
        """One epoch of augmented batches, the transform's randomness of epoch ``epoch``."""
        self._epoch = epoch
        if self._loader is None:
            raise ValueError("this trial's augmentation was closed")
        try:
            yield from self._loader
        except RuntimeError as e:
            if not str(e).startswith("DataLoader worker (pid"):
                raise
            raise AugmentWorkerDied("a worker process of this trial's augmentation ended without its batch (%s): the "
                                    "transform crashed it, or it was killed (the OOM killer, a signal); the stream "
                                    "cannot go on in this epoch. Fewer workers (SampleAugment(workers=)) need less "
                                    "memory" % e) from e

    def tasks(self) -> Iterator[Tuple[Any, ...]]:
        """The sampler's tasks of the epoch being read (this process): each consumer batch staged, then released."""
        plan = self.plan
        field = plan.fields[plan.at]
        staged = self.staging.numpy()
        for batch in self.consumer:
            arrays = batch.arrays()
            n = len(batch)
            slot = self._next_slot
            self._next_slot = (slot + 1) % self._slots
            row = arrays[field].reshape(n, -1).view(np.uint8)
            staged[slot, :n * plan.row_bytes].reshape(n, plan.row_bytes)[:] = row
            heads = np.array(arrays[_decoded.SHAPE]) if plan.decoded else None
            others = [np.array(arrays[f]) for f in plan.others]
            ids = np.array(arrays[plan.ids]).tolist()
            batch.release()
            yield slot, n, self._epoch, heads, others, ids

    def close(self) -> None:
        """Ends the workers."""
        it = getattr(self._loader, "_iterator", None)
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()
        self._loader = None


def len_or(consumer: Any) -> int:
    """The consumer's batch size (the most samples of a batch)."""
    return int(consumer.batch_size)
