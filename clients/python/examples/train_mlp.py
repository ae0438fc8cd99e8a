"""Train a small MLP on Fashion-MNIST served by a TensorSocket producer: the DataLoader replaced by a
TensorConsumer. Prints one JSON line per epoch of this job ("epoch": 1, 2, ...) with the test accuracy.

    bin/tensorsocket serve --name fm --idx /usr/share/datasets/fashion-mnist --mean 0.2860 --std 0.3530 \
        --batch-size 128 --epochs 0 &
    PYTHONPATH=clients/python python3 clients/python/examples/train_mlp.py --name fm \
        --test-idx /usr/share/datasets/fashion-mnist

The test set is normalised exactly like the served training set: the producer announces its mean and std
in its source description, and this script reads them from there.
"""

import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
from torch import nn

from tensorsocket_client import TensorConsumer
from tensorsocket_client.description import normalization


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(tuple(int(d) for d in dims))


def main():
    p = argparse.ArgumentParser()
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--name")
    target.add_argument("--dir")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--test-idx", help="directory holding t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz")
    args = p.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    loader = TensorConsumer(args.name, batch_size=args.batch_size, directory=args.dir)
    with loader:
        served = normalization(loader.source_description)
        if args.test_idx and served is None:
            raise SystemExit("train_mlp.py: producer '%s' does not say how it normalises its images (%s); "
                             "--test-idx needs a producer started with --idx" % (loader.producer, loader.source_description))
        for epoch in range(1, args.epochs + 1):
            started, samples, total_loss = time.monotonic(), 0, 0.0
            model.train()
            for batch in loader:  # one epoch; zero-copy tensors (read-only: the model never writes its inputs)
                t = batch.torch()
                x, y = t["image"], t["label"]
                opt.zero_grad()
                loss = loss_fn(model(x), y.long())
                loss.backward()
                opt.step()
                samples += len(batch)
                total_loss += float(loss) * len(batch)
            result = dict(epoch=epoch, epochs=args.epochs, samples=samples, batches=len(loader),
                          loss=total_loss / max(samples, 1),
                          seconds=time.monotonic() - started)
            if args.test_idx:
                images = read_idx(os.path.join(args.test_idx, "t10k-images-idx3-ubyte.gz"))
                labels = read_idx(os.path.join(args.test_idx, "t10k-labels-idx1-ubyte.gz"))
                mean, std = served
                x = (torch.from_numpy(images.astype(np.float32) / 255.0) - mean) / std
                model.eval()
                with torch.no_grad():
                    pred = model(x.reshape(len(x), 1, 28, 28)).argmax(1).numpy()
                result.update(accuracy=float((pred == labels).mean()), accuracy_on="test")
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
