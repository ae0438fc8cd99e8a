"""A PyTorch user's feeder, one way or another: what the process tests start, as a user's script would.

    python3 feed_case.py NAME CASE [--workers N] [--epochs E] [--opt rubber_band=5 ...]

The data set is the synthetic one (every sample checkable by `consume`), served as a map-style torch Dataset
in the generator's per-epoch order. CASE:
  ok          TensorProducer(...).run()
  passes      the reference's loop: for epoch in range(E): for _ in producer: pass; then producer.join()
  getitem     __getitem__ raises ValueError at sample 417 (in epoch 0, after some batches were served)
  sizes       one sample has a different shape, so the default collate fails on its batch
  strings     the batch carries a list of strings (a file name per sample)
  first       __getitem__ raises on the very first sample (before anything was declared)
  slow        as ok, at 200 samples/s (to be interrupted, or to feed while another feeder comes)
  mapstyle    a plain DataLoader(dataset, shuffle=True, num_workers=N): fed by index, in the producer's order
              (exact epochs for consumers joining mid-epoch); --sample-ms slows each sample
"""
import argparse
import logging
import signal
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from tensorsocket_client import TensorProducer
from tensorsocket_client.synthetic import SyntheticSpec


class Samples(Dataset):
    def __init__(self, spec, case, sample_ms=0.0):
        self.spec, self.case, self.sample_ms = spec, case, sample_ms

    def __len__(self):
        return self.spec.samples

    def __getitem__(self, index):
        if self.case == "getitem" and index == 417:
            raise ValueError("cannot decode sample 417: truncated file")
        if self.case == "first":
            raise OSError("cannot open the data set's first file")
        data = torch.from_numpy(self.spec.fill([index])[0])
        if self.case == "sizes" and index == 417:
            data = data[:-1]
        item = {"data": data, "label": int(self.spec.labels([index])[0]), "id": index}
        if self.case == "strings":
            item["path"] = "images/%06d.jpg" % index
        if self.case == "slow":
            time.sleep(0.005)  # 5 s an epoch, time enough to interrupt it or to come second
        if self.sample_ms:
            time.sleep(self.sample_ms / 1000.0)
        return item


class Order(Sampler):
    def __init__(self, spec):
        self.spec, self.epoch = spec, 0

    def __iter__(self):
        order = self.spec.order(self.epoch).tolist()
        self.epoch += 1
        return iter(order)

    def __len__(self):
        return self.spec.samples


def main():
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("case")
    p.add_argument("--spec", default="samples=1000,shape=3x4x4,dtype=float32,seed=5")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--sample-ms", type=float, default=0.0)
    p.add_argument("--by-index", action="store_true",
                   help="any case through a plain DataLoader(shuffle=True), fed by index as mapstyle is")
    p.add_argument("--log-info", action="store_true", help="the feeder's INFO lines on stderr, as share() logs them")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                   help="a producer option for the producer this feeder starts (rubber_band=5, slots=12, ...)")
    a = p.parse_args()
    if a.log_info:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # Ctrl-C raises KeyboardInterrupt, as in a terminal, however the suite was launched: a process started in the
    # background of a non-interactive shell (nohup ... &) inherits SIGINT ignored, and Python then never raises it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    options = {k: float(v) if "." in v else int(v) for k, v in (o.split("=", 1) for o in a.opt)}
    spec = SyntheticSpec.parse(a.spec)
    if a.case == "mapstyle" or a.by_index:
        loader = DataLoader(Samples(spec, a.case, a.sample_ms), batch_size=a.batch_size, shuffle=True,
                            num_workers=a.workers)
        TensorProducer(a.name, loader, epochs=a.epochs, description=spec.format() + ",order=producer", seed=11,
                       exact_epochs=True, **options).run()
        print('{"event": "fed"}', flush=True)
        return 0
    loader = DataLoader(Samples(spec, a.case), batch_size=a.batch_size, sampler=Order(spec), num_workers=a.workers)
    if a.case == "passes":
        producer = TensorProducer(a.name, loader, description=spec.format(), **options)
        for _epoch in range(a.epochs):
            for _ in producer:
                pass
        status = producer.join(timeout=120)
        print('{"event": "joined", "status": %s}' % status, flush=True)
        return 0
    TensorProducer(a.name, loader, epochs=a.epochs, description=spec.format(), **options).run()
    print('{"event": "fed"}', flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
