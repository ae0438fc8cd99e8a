"""Loader factories a sweep's trials share by name (``share("n", "share_loaders:synthetic", ...)``): importable from
the producer's process too. The samples are the synthetic ones, so every one is checkable by its id."""
import time

import torch
from torch.utils.data import DataLoader, Dataset

from tensorsocket_client.synthetic import SyntheticSpec


class Samples(Dataset):
    def __init__(self, spec, sample_ms, fail_at):
        self.spec, self.sample_ms, self.fail_at = spec, sample_ms, fail_at

    def __len__(self):
        return self.spec.samples

    def __getitem__(self, index):
        if index == self.fail_at:
            raise ValueError("cannot decode sample %d: truncated file" % index)
        if self.sample_ms:
            time.sleep(self.sample_ms / 1000.0)
        return (torch.from_numpy(self.spec.fill([index])[0]), int(self.spec.labels([index])[0]), index)


def synthetic(samples=1000, shape="3x4x4", seed=5, batch_size=50, num_workers=0, sample_ms=0.0, fail_at=-1):
    """A plain DataLoader(shuffle=True) over the synthetic data set: fed by index, so late trials get exact epochs."""
    spec = SyntheticSpec.parse("synthetic:samples=%d,shape=%s,dtype=float32,seed=%d" % (samples, shape, seed))
    return DataLoader(Samples(spec, sample_ms, fail_at), batch_size=batch_size, shuffle=True, num_workers=num_workers)


class Jitter:
    """A trial's own random augmentation (its strength the hyper-parameter): a flip half the time, then noise."""

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        if torch.rand(()) < 0.5:
            x = x.flip(-1)
        return x + self.scale * torch.randn(x.shape)


def broken(**kwargs):
    raise RuntimeError("the data set's root /data/cifar does not exist")


class KeptSamples(Samples):
    """The synthetic samples in the two-function form a decoded-sample cache keeps (``cache_mb``): ``load`` counts
    its calls in a file, so a test sees what was loaded once per sweep."""

    def __init__(self, spec, count_file):
        super().__init__(spec, 0.0, -1)
        self.count_file = count_file

    def load(self, index):
        with open(self.count_file, "a") as f:
            f.write("%d\n" % index)
        return super().__getitem__(index)

    def augment(self, sample):
        return sample

    def __getitem__(self, index):
        return self.augment(self.load(index))


def kept(samples=60, batch_size=8, num_workers=2, count_file="/dev/null"):
    """synthetic()'s samples in the two-function form of a decoded-sample cache."""
    spec = SyntheticSpec.parse("synthetic:samples=%d,shape=3x4x4,dtype=float32,seed=5" % samples)
    return DataLoader(KeptSamples(spec, count_file), batch_size=batch_size, shuffle=True, num_workers=num_workers)
