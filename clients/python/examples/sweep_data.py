"""The loader factory the Tune sweep's trials share by name (``share("...", "sweep_data:images", ...)``): importable
from the producer's process too. Synthetic 3x32x32 images with a class label and an id, so a trial can check that
every epoch is one pass over the data set; swap in your own (a torchvision data set, say) the same way."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, samples, seed, decode_us=0):
        self.samples, self.seed, self.decode_us = samples, seed, decode_us

    def __len__(self):
        return self.samples

    def __getitem__(self, i):
        if self.decode_us:  # the CPU a real decode and augmentation would take, spent
            until = time.perf_counter() + self.decode_us / 1e6
            while time.perf_counter() < until:
                pass
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        label = i % 10
        image = torch.randn(3, 32, 32, generator=g) * 0.5 + label / 10.0
        return image, label, i


def images(samples=2000, seed=0, batch_size=64, num_workers=0, decode_us=0):
    """A plain DataLoader(shuffle=True) over a map-style data set: fed by index, so late trials get exact epochs.
    ``decode_us``: CPU microseconds each sample costs to load, as a JPEG decode would."""
    return DataLoader(Images(samples, seed, decode_us), batch_size=batch_size, shuffle=True, num_workers=num_workers)
