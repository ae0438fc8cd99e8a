"""A trial's own augmentation of a shared stream, in worker processes of its own ahead of the training loop, as its
private ``DataLoader`` would run it: the loop only takes ready batches.

The workers are a torch ``DataLoader``'s (its worker start, prefetching, ordering, and its errors: a transform's
exception reaches the loop with the worker's traceback, a worker's death as an error naming it). Its sampler runs in
the trial's process and reads the consumer. A consumer batch that views one arena slot is kept (held from the
producer) while a worker reads its rows straight from the arena file (``Batch.file_region``, opened through
``/proc/<trial pid>/fd/<fd>`` and mapped once per worker), and released when its result comes back, in order; one
gathered from several slots has its augmented field copied into a slot of a staging ring in shared memory (made and
touched once, before the workers start) and is released at once. The task ``(source, samples, epoch, shapes, other
fields, ids)`` goes to a worker, which turns each row back into the sample
(``_decoded.unpack``: the decoded image; or the tensor row), applies the transform seeded per sample
(``SampleAugment.sample``). Where the transform gives tensors of one shape and the samples are collated by torch's
``default_collate``, the worker writes each augmented sample into its row of an output ring (``_output_ring``: memory
files made and touched once, shared with the workers, the shape from the first sample augmented in the trial's
process) and only the small fields travel back; the loop gets a tensor viewing the ring, which stays valid as long as
the loop keeps it (a slot still viewed when it is due again is copied aside first), so no batch is allocated, faulted
in, stacked and handed through fresh shared memory per step as a private DataLoader's is. Otherwise the worker
collates and the DataLoader carries the batch back as it would a private loader's.

Slot reuse: the DataLoader keeps at most P = ``workers x prefetch_factor`` tasks outstanding and hands the batches
out in order, so a trial holds at most P kept batches, and a staging slot (P of them) is written again only after its
task was done. An epoch left before its end (the loop broke off) leaves tasks of kept batches that workers may still
read: the workers are ended, then the batches released, and the next epoch starts workers anew::

    staging ring (uint8, shared)   slot 0 | slot 1 | ... | slot P-1        P = workers x prefetch_factor (1 without)
      slot                         row 0 | row 1 | ... | row b-1           b = the consumer's batch size
      row                          one sample's field to augment, its bytes as the producer serves them
"""

import collections
import itertools
import mmap
import os
from typing import Any, Deque, Dict, Iterator, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from . import _decoded
from ._output_ring import OutputRing
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
        return self.stage.pending()


class _Augmenting(Dataset):
    """What a worker runs for a task: the staged rows back into samples, each augmented; written into the output ring
    (``out``, once the stage made it) or collated."""

    def __init__(self, augment: Any, staging: torch.Tensor, plan: _Plan):
        self.augment = augment
        self.staging = staging
        self.row_bytes = plan.row_bytes
        self.row = plan.row
        self.at = plan.at
        self.out: Optional[OutputRing] = None
        self._files = _ArenaFiles()

    def sample(self, task: Tuple[Any, ...], k: int) -> Any:
        """Sample ``k`` of ``task``, before its augmentation."""
        source, _, n, _, heads, _, _ = task
        if isinstance(source, tuple):  # (pid, fd, inode, offset): the rows in an arena file, read where they are
            rows = self._files.rows(*source)
            row = rows[source[3] + k * self.row_bytes:source[3] + (k + 1) * self.row_bytes]
        else:
            row = self.staging[source].numpy()[k * self.row_bytes:(k + 1) * self.row_bytes]
        if self.row is None:
            return _decoded.unpack(row, heads[k])
        dtype, shape = self.row
        return torch.from_numpy(row.view(dtype).reshape(shape).copy())

    def __getitem__(self, task: Tuple[Any, ...]) -> Any:
        _, out_slot, n, epoch, _, others, ids = task
        out = self.out
        samples = []
        with torch.random.fork_rng(devices=[]):  # once a task: its samples each seed the generator
            for k in range(n):
                samples.append(self.augmented(task, k, epoch, int(ids[k])))
        if out is None:
            return self.augment.collate(samples)
        # The other fields as the task brought them (numpy: carried back inline, no shared memory per batch); the
        # trial's process makes them tensors, as default_collate would have stacked them.
        return out_slot, n, others

    def augmented(self, task: Tuple[Any, ...], k: int, epoch: int, sample_id: int) -> Any:
        """Sample ``k`` of ``task`` augmented: written into the output ring's row (None), or the sample's fields."""
        _, out_slot, _, _, _, others, _ = task
        out = self.out
        y = self.augment.seeded(self.sample(task, k), epoch, sample_id)
        if out is None:
            fields = [torch.from_numpy(np.array(o[k])) for o in others]
            fields.insert(self.at, y)
            return tuple(fields)
        if not isinstance(y, torch.Tensor) or tuple(y.shape) != out.shape[1:] or y.dtype != out.dtype:
            raise ValueError("the transform gave sample %d %s where the first sample it augmented gave a %s "
                             "tensor of shape %s: a batch stacks samples of one shape (as default_collate does)"
                             % (sample_id, _what(y), str(out.dtype).replace("torch.", ""), out.shape[1:]))
        out.batch(out_slot)[k].copy_(y)
        return None

    def __len__(self) -> int:
        raise TypeError("a sampler of tasks drives it")


class _ArenaFiles:
    """The arena files a process reads kept batches' rows from: each mapped read-only once, through the trial's
    ``/proc/<pid>/fd/<fd>`` (a lane's arena is opened after the workers were forked), known by its inode (a closed
    lane's descriptor number can come back for another file)."""

    def __init__(self) -> None:
        self._maps: Dict[Tuple[int, int], Tuple[int, np.ndarray]] = {}

    def rows(self, pid: int, fd: int, inode: int, offset: int) -> np.ndarray:
        """The whole file's bytes, read-only."""
        known = self._maps.get((pid, fd))
        if known is not None and known[0] == inode:
            return known[1]
        f = os.open("/proc/%d/fd/%d" % (pid, fd), os.O_RDONLY)
        try:
            if os.fstat(f).st_ino != inode:
                raise ValueError("the arena file the trial's descriptor %d named is not the one it had (inode %d, now "
                                 "%d)" % (fd, inode, os.fstat(f).st_ino))
            mapped = mmap.mmap(f, 0, prot=mmap.PROT_READ)
        finally:
            os.close(f)
        rows = np.frombuffer(mapped, dtype=np.uint8)
        self._maps[(pid, fd)] = (inode, rows)
        return rows


class AugmentStage:
    """``augment`` of ``consumer``'s batches in ``workers`` processes (0: in this process), ``prefetch_factor`` batches
    each ahead; :meth:`epoch` gives one epoch of augmented batches, tuples of the fields as the trial's private loader
    would give them. The workers stay across epochs, until :meth:`close`."""

    def __init__(self, consumer: Any, augment: Any, workers: int, names: Optional[Sequence[str]] = None):
        self.consumer = consumer
        self.augment = augment
        self.plan = _Plan(consumer.tensors, augment, names)
        workers = int(workers)
        if workers < 0:
            raise ValueError("augmentation workers are 0 or more, not %d" % workers)
        prefetch = int(augment.prefetch_factor)
        self._slots = workers * prefetch if workers > 0 else 1
        self._out_slots = self._slots + 2  # see _output_ring
        self.staging = torch.zeros((self._slots, max(1, int(consumer.batch_size)) * self.plan.row_bytes),
                                   dtype=torch.uint8)
        if workers > 0:
            self.staging.share_memory_()  # the workers' input, touched once here
        self._tasks_made = 0
        self._epoch = 0
        # the batches of the tasks handed out, in order: a kept one (released once its result came back), or None
        self._kept: Deque[Any] = collections.deque()
        self._direct = workers > 0
        self._pending: Optional[Iterator[Tuple[Any, ...]]] = None
        self._augmenting = _Augmenting(augment, self.staging, self.plan)
        self._out_decided = False
        # collate_fn: a task's result as the worker made it (the default would make its numpy arrays tensors there,
        # each then handed over through shared memory of its own)
        options: Dict[str, Any] = dict(num_workers=workers, persistent_workers=workers > 0, collate_fn=_as_made)
        if workers > 0:
            options["prefetch_factor"] = prefetch
            options["multiprocessing_context"] = "fork"  # the output ring's mappings reach the workers by fork
        self._options = options
        self._loader: Optional[DataLoader] = DataLoader(self._augmenting, batch_size=None, sampler=_Tasks(self),
                                                        **options)
        self.workers = workers

    def epoch(self, epoch: int) -> Iterator[Any]:
        """One epoch of augmented batches, the transform's randomness of epoch ``epoch``."""
        self._epoch = epoch
        if self._loader is None:
            raise ValueError("this trial's augmentation has ended (its loader was closed, or a worker of it died): "
                             "make the loader again (share(...)) to read on")
        if any(b is not None for b in self._kept):
            self._restart()  # the last epoch broke off: its workers may still read the batches it kept
        self._kept.clear()
        self._pending = self.tasks()
        if not self._out_decided:
            self._decide_out()
        out = self._augmenting.out
        try:
            for r in self._loader:
                kept = self._kept.popleft() if self._kept else None
                if kept is not None:
                    kept.release()  # its worker is done with it
                if out is None:
                    yield r
                    continue
                out_slot, n, others = r
                fields = [torch.from_numpy(o) for o in others]
                fields.insert(self.plan.at, out.batch(out_slot, n))
                yield tuple(fields)
        except (RuntimeError, EOFError, ConnectionError) as e:
            # torch's word for a dead worker, or the hand-over of its last result broken off by its death
            if isinstance(e, RuntimeError) and not str(e).startswith("DataLoader worker (pid"):
                raise
            self.close()  # the other workers too: torch then stops watching them (no later SIGCHLD raises anywhere)
            raise AugmentWorkerDied("a worker process of this trial's augmentation ended without its batch (%r): the "
                                    "transform crashed it, or it was killed (the OOM killer, a signal); the stream "
                                    "cannot go on in this epoch. Fewer workers (SampleAugment(workers=)) need less "
                                    "memory" % e) from e

    def _decide_out(self) -> None:
        """Before the workers start: the output ring, shaped by the first sample augmented here (its randomness then
        put back), where samples are collated by default_collate and the transform gives a tensor."""
        from torch.utils.data import default_collate
        assert self._pending is not None
        first = next(self._pending, None)
        if first is None:
            return  # an empty epoch: decided at the next
        self._out_decided = True
        self._pending = itertools.chain([first], self._pending)
        if self.augment.collate is not default_collate:
            return
        y = self.augment.sample(self._augmenting.sample(first, 0), self._epoch, int(first[6][0]))
        if not isinstance(y, torch.Tensor):
            return
        self._augmenting.out = OutputRing(self._out_slots, (int(self.consumer.batch_size),) + tuple(y.shape), y.dtype)

    def pending(self) -> Iterator[Tuple[Any, ...]]:
        """The tasks of the epoch being read (the sampler's iterator)."""
        pending, self._pending = self._pending, None
        return pending if pending is not None else self.tasks()

    def tasks(self) -> Iterator[Tuple[Any, ...]]:
        """The sampler's tasks of the epoch being read (this process): each consumer batch kept for a worker to read
        in place, or staged and released."""
        plan = self.plan
        field = plan.fields[plan.at]
        staged = self.staging.numpy()
        pid = os.getpid()
        for batch in self.consumer.batches(keep=self._direct):
            arrays = batch.arrays()
            n = len(batch)
            slot, out_slot = self._tasks_made % self._slots, self._tasks_made % self._out_slots
            self._tasks_made += 1
            if self._augmenting.out is not None:
                self._augmenting.out.reuse(out_slot)
            region = batch.file_region(field) if self._direct else None
            source: Any = slot
            if region is not None:
                fd, offset = region
                source = (pid, fd, os.fstat(fd).st_ino, offset)
            else:
                row = arrays[field].reshape(n, -1).view(np.uint8)
                staged[slot, :n * plan.row_bytes].reshape(n, plan.row_bytes)[:] = row
            heads = np.array(arrays[_decoded.SHAPE]) if plan.decoded else None
            others = [np.array(arrays[f]) for f in plan.others]
            ids = np.array(arrays[plan.ids]).tolist()
            del arrays  # no view of the slot stays in this process: its release is never a copy
            if region is None:
                batch.release()
                self._kept.append(None)
            else:
                self._kept.append(batch)
            yield source, out_slot, n, self._epoch, heads, others, ids

    def _restart(self) -> None:
        """Ends the workers, releases the batches they may have been reading, and makes the loader that starts new
        ones at the next epoch."""
        self._end_workers()
        self._release_kept()
        assert self._loader is not None
        self._loader = DataLoader(self._augmenting, batch_size=None, sampler=_Tasks(self), **self._options)

    def _release_kept(self) -> None:
        while self._kept:
            b = self._kept.popleft()
            if b is not None:
                b.release()

    def _end_workers(self) -> None:
        it = getattr(self._loader, "_iterator", None)
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()

    def close(self) -> None:
        """Ends the workers, then releases the batches they read."""
        self._end_workers()
        self._release_kept()
        self._loader = None
        if self._augmenting.out is not None:
            self._augmenting.out.close()


def _as_made(result: Any) -> Any:
    return result


def _what(y: Any) -> str:
    if isinstance(y, torch.Tensor):
        return "a %s tensor of shape %s" % (str(y.dtype).replace("torch.", ""), tuple(y.shape))
    return "a %s" % type(y).__name__
