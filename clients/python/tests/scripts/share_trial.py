"""One trial of a sweep, as a sweep engine starts it: the same line in every trial shares one loader.

    python3 share_trial.py NAME --epochs E --batch-size B [--kwargs JSON] [--linger S] [--factory module:fn]

Prints one JSON line per epoch (samples, distinct ids, start mode, the producer's pid) and checks each epoch is one
pass over the data set.
"""
import argparse
import json
import sys
import time

from tensorsocket_client import share


def main():
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("--factory", default="share_loaders:synthetic")
    p.add_argument("--kwargs", default="{}")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--linger", type=float, default=60.0)
    p.add_argument("--step-ms", type=float, default=0.0)
    a = p.parse_args()
    t0 = time.monotonic()
    loader = share(a.name, a.factory, batch_size=a.batch_size, kwargs=json.loads(a.kwargs), linger=a.linger)
    consumer = loader.dataset.consumer
    print(json.dumps(dict(event="attached", seconds=time.monotonic() - t0, producer_pid=consumer._welcome.producer_pid,
                          source=consumer.source_description)), flush=True)
    n = consumer.samples_per_epoch
    for epoch in range(a.epochs):
        ids = []
        for _data, _label, sample_id in loader:
            ids.extend(int(i) for i in sample_id)
            if a.step_ms:
                time.sleep(a.step_ms / 1000.0)
        exact = len(ids) == n and len(set(ids)) == n
        print(json.dumps(dict(epoch=epoch, samples=len(ids), unique=len(set(ids)), exact=exact,
                              start=consumer.start_mode)), flush=True)
        if not exact:
            print("epoch %d is not one pass over the %d samples" % (epoch, n), file=sys.stderr)
            return 1
    loader.dataset.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
