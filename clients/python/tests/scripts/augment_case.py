"""A Python trial augmenting what a Java producer decoded (``serve --images DIR --sample-ids``, deterministic
transforms, uint8 HWC):

    python3 augment_case.py NAME --epochs E

First reads one epoch as it is served, keeping each sample by its id (the decoded images: the "data set"), and
leaves; then reads E epochs through ``torch_data.loader(..., augment=SampleAugment(...))`` and compares every sample
with ``SampleAugment.over`` that data set in the same epoch. Prints one JSON line per augmented epoch (samples, how
many equal the private pipeline's, distinct ids).
"""
import argparse
import json
import sys

import torch

from tensorsocket_client import TensorConsumer
from tensorsocket_client.augment import SampleAugment
from tensorsocket_client.torch_data import loader


def jitter(x):
    """HWC uint8 to CHW float, a flip half the time, then noise: random by torch's generator."""
    x = x.permute(2, 0, 1).float()
    if torch.rand(()) < 0.5:
        x = x.flip(-1)
    return x + torch.randn(x.shape)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8)
    a = p.parse_args()
    decoded = {}
    with TensorConsumer(a.name, batch_size=a.batch_size, connect_timeout=60) as c:
        for batch in c:
            t = batch.torch()
            for image, i in zip(t["image"], t["index"].tolist()):
                decoded[i] = image.clone()
    dataset = [(decoded[i], 0, i) for i in range(len(decoded))]
    aug = SampleAugment(jitter, seed=3)
    private = aug.over(dataset)
    trial = loader(a.name, a.batch_size, names=("image", "label", "index"), augment=aug, connect_timeout=60)
    for epoch in range(a.epochs):
        private.set_epoch(epoch)
        samples, equal, ids = 0, 0, set()
        for images, _labels, index in trial:
            for row, i in zip(images, index.tolist()):
                samples += 1
                ids.add(i)
                equal += int(torch.equal(row, private[i][0]))
        print(json.dumps(dict(epoch=epoch, samples=samples, equal=equal, unique=len(ids), decoded=len(decoded))),
              flush=True)
    trial.dataset.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
