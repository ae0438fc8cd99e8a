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


def photos(root, batch_size=8, num_workers=2, indexed=True):
    """A trial's private loader as written: torchvision's ImageFolder over ``root`` with a transform of its own (which a
    producer started for trials that augment themselves turns off), in ``Indexed`` so that batches carry the ids."""
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder

    from tensorsocket_client.augment import Indexed
    folder = ImageFolder(root, transform=T.Compose([T.CenterCrop(16), T.ToTensor()]))
    return DataLoader(Indexed(folder) if indexed else folder, batch_size=batch_size, shuffle=True,
                      num_workers=num_workers)


def photo_transform(size=24, scale=0.3):
    """A trial's own PIL transform, as it would give its private ImageFolder: crop, flip, colour, to a tensor."""
    import torchvision.transforms as T
    return T.Compose([T.RandomResizedCrop(size, scale=(scale, 1.0)), T.RandomHorizontalFlip(),
                      T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor()])


class Failing:
    """A trial's transform that raises on the images of one size (``broken``: width, height), and sleeps ``ms`` on
    each, so that a test catches it mid-epoch."""

    def __init__(self, broken=(0, 0), ms=0.0):
        self.broken, self.ms = tuple(broken), ms
        self.inner = photo_transform()

    def __call__(self, image):
        if self.ms:
            time.sleep(self.ms / 1000.0)
        if image.size == self.broken:
            raise ValueError("cannot crop this %dx%d image: it is the broken one" % image.size)
        return self.inner(image)
