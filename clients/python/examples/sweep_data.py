"""The loader factory the Tune sweep's trials share by name (``share("...", "sweep_data:images", ...)``): importable
from the producer's process too. Synthetic 3x32x32 images with a class label and an id, so a trial can check that
every epoch is one pass over the data set; swap in your own (a torchvision data set, say) the same way."""
import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, samples, seed):
        self.samples, self.seed = samples, seed

    def __len__(self):
        return self.samples

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        label = i % 10
        image = torch.randn(3, 32, 32, generator=g) * 0.5 + label / 10.0
        return image, label, i


def images(samples=2000, seed=0, batch_size=64, num_workers=0):
    """A plain DataLoader(shuffle=True) over a map-style data set: fed by index, so late trials get exact epochs."""
    return DataLoader(Images(samples, seed), batch_size=batch_size, shuffle=True, num_workers=num_workers)
