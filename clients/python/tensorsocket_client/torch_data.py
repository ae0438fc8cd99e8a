"""A consumer as a torch ``IterableDataset`` / ``DataLoader``, so a plain training loop or PyTorch
Lightning's ``train_dataloader()`` reads a producer's batches unchanged:

    def train_dataloader(self):
        return tensorsocket_client.torch_data.loader("cifar", batch_size=64, names=("image", "label"))

Each epoch of the training loop is one epoch of the producer. Batches are zero-copy views of the shared
memory, valid until the next batch is requested (``copy=True`` hands out private copies instead, for
loops that keep tensors across steps).
"""

from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

import torch
from torch.utils.data import DataLoader, IterableDataset

from ._augment_workers import AugmentStage
from .augment import SampleAugment
from .consumer import TensorConsumer


class TensorSocketDataset(IterableDataset):
    """Iterating it yields one epoch of the producer's batches at ``batch_size``: a tuple of tensors in
    ``names`` order, or with ``names=None`` a dict of every tensor. The consumer connects on the first
    iteration, in the process that iterates (use ``num_workers=0``: the batches are already made)."""

    def __init__(self, name: str, batch_size: int, names: Optional[Sequence[str]] = None, drop_last: bool = False,
                 copy: bool = False, consumer: Optional[TensorConsumer] = None, augment: Optional[SampleAugment] = None,
                 augment_workers: Optional[int] = None, **consumer_options: Any):
        """``consumer``: one already connected (what ``share()`` hands over), used until the dataset is copied.
        ``augment``: this reader's own augmentation of each batch (see :mod:`.augment`), run in worker processes of
        this reader's (``augment.workers``, else ``augment_workers``, else none), its epochs counted from this
        dataset's first iteration; over a producer that serves tensors rather than decoded samples it needs
        ``names``."""
        super().__init__()
        self.name = name
        self.batch_size = batch_size
        self.names = tuple(names) if names is not None else None
        self.drop_last = drop_last
        self.copy = copy
        self._options = consumer_options
        self._consumer: Optional[TensorConsumer] = consumer
        self.augment = augment
        self._augment_workers = augment_workers
        self._stage: Optional[AugmentStage] = None
        self._epochs = 0

    @property
    def consumer(self) -> TensorConsumer:
        if self._consumer is None:
            self._consumer = TensorConsumer(self.name, batch_size=self.batch_size, drop_last=self.drop_last,
                                            **self._options)
        return self._consumer

    def __len__(self) -> int:
        return len(self.consumer)

    def __iter__(self) -> Iterator[Union[Tuple[torch.Tensor, ...], Dict[str, torch.Tensor]]]:
        epoch = self._epochs
        self._epochs += 1
        if self.augment is not None:
            yield from self._augmented().epoch(epoch)
            return
        for batch in self.consumer:
            t = batch.torch()
            if self.copy:
                t = {k: v.clone() for k, v in t.items()}
            if self.names is None:
                yield t
            else:
                yield tuple(t[n] for n in self.names)

    def _augmented(self) -> AugmentStage:
        assert self.augment is not None
        if self._stage is None:
            workers = self.augment.workers
            if workers is None:
                workers = self._augment_workers or 0
            self._stage = AugmentStage(self.consumer, self.augment, workers, self.names)
        return self._stage

    def state_dict(self) -> Dict[str, Any]:
        """This reader's checkpoint (see :meth:`TensorConsumer.state_dict`) and how many epochs it began."""
        if self.augment is not None:
            raise ValueError("a checkpoint of a reader that augments (augment=) is not available: its workers read "
                             "ahead of the loop; checkpoint at an epoch's end and call set_epoch() when resuming")
        return {"consumer": self.consumer.state_dict(), "epochs_begun": self._epochs}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues where ``state`` (from :meth:`state_dict`) was taken: the next iteration is the rest of that
        epoch, every sample not read before it once, then whole epochs."""
        c = state["consumer"]
        self.consumer.load_state_dict(c)
        self._epochs = int(state["epochs_begun"]) - (1 if c["handed"] else 0)

    def set_epoch(self, epoch: int) -> None:
        """Numbers the next iteration's epoch ``epoch`` (and the ones after it from there) for ``augment``, which
        counts this dataset's iterations from 0 otherwise: a trial resumed from its checkpoint at epoch 5 calls
        ``set_epoch(5)``, as it would on its private pipeline's data set (``AugmentedDataset.set_epoch``)."""
        self._epochs = int(epoch)

    def close(self) -> None:
        if self._stage is not None:
            self._stage.close()
            self._stage = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __getstate__(self):
        # A connection does not travel to another process; the copy connects on its own.
        state = self.__dict__.copy()
        state["_consumer"] = None
        state["_stage"] = None
        return state


class SharedLoader(DataLoader):
    """A ``DataLoader`` over a :class:`TensorSocketDataset` (batches pass through as the producer made them) that
    checkpoints where it stands, as torchdata's ``StatefulDataLoader`` does: Lightning and Ray Train save its
    ``state_dict()`` with the model and give it back with ``load_state_dict()``, and the trial goes on with the rest
    of its epoch."""

    def __init__(self, dataset: TensorSocketDataset):
        super().__init__(dataset, batch_size=None, num_workers=0)

    def state_dict(self) -> Dict[str, Any]:
        return self.dataset.state_dict()  # type: ignore[attr-defined]

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)  # type: ignore[attr-defined]


def loader(name: str, batch_size: int, names: Optional[Sequence[str]] = None, **options: Any) -> DataLoader:
    """A :class:`SharedLoader` over :class:`TensorSocketDataset`: batches pass through as the producer made them."""
    return SharedLoader(TensorSocketDataset(name, batch_size, names=names, **options))
