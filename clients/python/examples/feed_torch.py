"""Feeds a torch DataLoader into an external producer: the synthetic data set as a torch Dataset, visited in
the Java generator's seeded shuffle order, so `consume` (Java or Python) verifies every sample.

    python3 examples/feed_torch.py --name N --synthetic samples=1000,shape=3x8x8,seed=1 --batch-size 64 --epochs 2

--break-after K makes the feeder misbehave after K batches (tests): `more` declares fewer samples than the
loader yields, `shape` changes a tensor's shape.
"""
import argparse

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from tensorsocket_client import TensorProducer
from tensorsocket_client.synthetic import SyntheticSpec


class SyntheticDataset(Dataset):
    def __init__(self, spec):
        self.spec = spec

    def __len__(self):
        return self.spec.samples

    def __getitem__(self, i):
        return {"data": torch.from_numpy(self.spec.fill([i])[0]), "label": int(self.spec.labels([i])[0]), "id": i}


class SeededOrder(Sampler):
    """The generator's per-epoch shuffle; set_epoch as with DistributedSampler."""

    def __init__(self, spec):
        self.spec, self.epoch = spec, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        return iter(self.spec.order(self.epoch).tolist())

    def __len__(self):
        return self.spec.samples


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--synthetic", required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--break-after", type=int, default=-1)
    p.add_argument("--break-how", default="shape")
    a = p.parse_args()
    spec = SyntheticSpec.parse(a.synthetic)
    sampler = SeededOrder(spec)
    loader = DataLoader(SyntheticDataset(spec), batch_size=a.batch_size, sampler=sampler)

    def epoch(e):
        sampler.set_epoch(e)
        for k, b in enumerate(loader):
            if k == a.break_after and a.break_how == "shape":
                b["data"] = b["data"][:, :1]
            yield b

    declared = spec.samples - 1 if a.break_how == "more" and a.break_after >= 0 else None
    TensorProducer(a.name, loader, epochs=a.epochs, description=spec.format(), epoch_loader=epoch,
                   samples_per_epoch=declared, start_producer=False).run()
    print('{"event": "fed"}', flush=True)


if __name__ == "__main__":
    main()
