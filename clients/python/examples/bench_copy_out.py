"""Benchmark: a Python TensorConsumer that copies every batch out of the arena (what a training step that
moves a batch to its device does), fed by a Java producer of ready-made synthetic batches (``serve --synthetic
... --preload``), so the figure is the shared-memory path to Python and the copy, not a loader.

    python3 clients/python/examples/bench_copy_out.py [--batches 600] [--shape 3x224x224] [--runs 1]

Prints, per run, one JSON line: batches/s after a warm-up of 20 batches, the rate of the copies alone (the
limit of this consumer), the median and 99th percentile of the time between batches, and the page size the
producer's log reports for its arena. Set ``TENSORSOCKET_HUGE_PAGES=0`` to compare with 4 KiB pages. Needs the
Java build (bin/tensorsocket).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python"))
from tensorsocket_client import TensorConsumer  # noqa: E402

BATCH = 64
WARM_UP = 20


def run(a, index):
    name = "bench-copy-out-%d-%d" % (os.getpid(), index)
    log = tempfile.TemporaryFile()
    serve = subprocess.Popen([a.launcher, "serve", "--name", name, "--synthetic",
                              "samples=%d,shape=%s,dtype=float32,seed=1" % (20 * BATCH, a.shape), "--preload",
                              "--batch-size", str(BATCH), "--epochs", "0"], stdout=subprocess.DEVNULL, stderr=log)
    try:
        out, seen, copying, gaps = None, 0, 0.0, []
        with TensorConsumer(name, batch_size=BATCH, connect_timeout=120, batch_timeout=60) as c:
            it = iter(c)
            last = time.perf_counter()
            while seen < WARM_UP + a.batches:
                try:
                    b = next(it)
                except StopIteration:
                    it = iter(c)
                    continue
                data = b["data"]
                if out is None:
                    out = np.empty_like(data)
                    out.fill(0)
                start = time.perf_counter()
                np.copyto(out, data)
                now = time.perf_counter()
                if seen >= WARM_UP:
                    copying += now - start
                    gaps.append(now - last)
                last = now
                seen += 1
        gaps.sort()
        log.seek(0)
        pages = re.search(r"in (\d+ [KM]iB) pages", log.read().decode(errors="replace"))
        return {"batches": a.batches, "batches_per_s": round(a.batches / sum(gaps), 1),
                "copy_only_batches_per_s": round(a.batches / copying, 1),
                "gap_p50_ms": round(gaps[len(gaps) // 2] * 1e3, 2), "gap_p99_ms": round(gaps[int(len(gaps) * 0.99)] * 1e3, 2),
                "arena_pages": pages.group(1) if pages else "unknown"}
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
        log.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=600)
    p.add_argument("--shape", default="3x224x224")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--launcher", default=os.environ.get("TENSORSOCKET_LAUNCHER", str(ROOT / "bin/tensorsocket")))
    a = p.parse_args()
    for i in range(a.runs):
        print(json.dumps(run(a, i)), flush=True)


if __name__ == "__main__":
    main()
