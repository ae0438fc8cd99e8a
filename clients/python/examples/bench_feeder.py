"""Benchmark: a Python feeder (TensorProducer over ready-made torch batches) against the Java synthetic
source, each serving 64x3x224x224 float32 batches to 1 and 4 consumers, in one run.

    python3 clients/python/examples/bench_feeder.py [--batches 150] [--consumers 1,4]

Needs the Java build (bin/tensorsocket) and torch. Consumers are Python TensorConsumers that touch one
value per batch (zero-copy reads), so the figure is what the producer side delivers. The feeder's loader
yields the same few preallocated tensors, so its cost is the feeder itself: one copy of each batch into
its slot, compared with a plain numpy copy of one batch in this process.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
CLIENT = Path(__file__).resolve().parents[1]
SHAPE = (3, 224, 224)
BATCH = 64

CONSUMER = r"""
import sys, time, json
from tensorsocket_client import TensorConsumer
c = TensorConsumer(sys.argv[1], batch_size=%d, connect_timeout=120, batch_timeout=300)
n = 0; t0 = None
for b in c:
    if t0 is None: t0 = time.monotonic()
    float(b["data"][0, 0, 0, 0]); n += 1
print(json.dumps({"batches": n, "seconds": time.monotonic() - t0}), flush=True)
""" % BATCH

FEEDER = r"""
import sys, time, torch
from tensorsocket_client import TensorProducer
batches = int(sys.argv[2])
made = [(torch.rand(%d, 3, 224, 224), torch.randint(0, 1000, (%d,))) for _ in range(4)]
def epoch(e):
    for i in range(batches):
        yield made[i %% 4]
TensorProducer(sys.argv[1], None, epochs=1, samples_per_epoch=batches * %d, epoch_loader=epoch,
               names=("data", "label"), start_producer=False).run()
""" % (BATCH, BATCH, BATCH)


def run(source, consumers, batches, env):
    name = "bench-%s-%d" % (source, consumers)
    serve = [str(ROOT / "bin/tensorsocket"), "serve", "--name", name, "--min-consumers", str(consumers)]
    if source == "java":
        serve += ["--synthetic", "samples=%d,shape=3x224x224,dtype=float32,seed=1" % (batches * BATCH),
                  "--batch-size", str(BATCH)]
    else:
        serve += ["--external"]
    procs = [subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        d = Path(env["TENSORSOCKET_BASE"]) / name
        ready = d / ("control.sock" if source == "java" else "feeder.sock")
        deadline = time.monotonic() + 60
        while not ready.exists():
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise RuntimeError("the producer did not start: " + " ".join(serve))
            time.sleep(0.05)
        if source == "python":
            procs.append(subprocess.Popen([sys.executable, "-c", FEEDER, name, str(batches)], env=env))
        cs = [subprocess.Popen([sys.executable, "-c", CONSUMER, name], stdout=subprocess.PIPE, env=env)
              for _ in range(consumers)]
        results = [json.loads(c.communicate(timeout=600)[0].decode().strip().splitlines()[-1]) for c in cs]
        slowest = max(r["seconds"] for r in results)
        return results[0]["batches"] / slowest
    finally:
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()


def memcpy_batches_per_s():
    src = np.random.rand(BATCH, *SHAPE).astype(np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    t0 = time.perf_counter()
    for _ in range(20):
        np.copyto(dst, src)
    return 20 / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=150)
    p.add_argument("--consumers", default="1,4")
    a = p.parse_args()
    own_base = None if "TENSORSOCKET_BASE" in os.environ else tempfile.mkdtemp(prefix="ts-bench-", dir="/dev/shm")
    env = dict(os.environ, PYTHONPATH=str(CLIENT), OMP_NUM_THREADS="1",
               TENSORSOCKET_BASE=os.environ.get("TENSORSOCKET_BASE", own_base))
    try:
        table(a, env)
    finally:
        if own_base is not None:
            shutil.rmtree(own_base, ignore_errors=True)


def table(a, env):
    mb = BATCH * int(np.prod(SHAPE)) * 4 / 1e6
    copy = memcpy_batches_per_s()
    print("batch: %d x 3x224x224 float32 = %.1f MB; one numpy copy of a batch here: %.1f batches/s (%.2f GB/s)"
          % (BATCH, mb, copy, copy * mb / 1e3))
    print("| source | consumers | batches/s | GB/s delivered per consumer |")
    print("|---|---|---|---|")
    for source in ("java", "python"):
        for n in [int(x) for x in a.consumers.split(",")]:
            rate = run(source, n, a.batches, env)
            label = "Java synthetic source" if source == "java" else "Python feeder (TensorProducer)"
            print("| %s | %d | %.1f | %.2f |" % (label, n, rate, rate * mb / 1e3), flush=True)


if __name__ == "__main__":
    main()
