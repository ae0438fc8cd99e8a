"""What resuming an epoch from a checkpoint costs: a trial reads an epoch and a half of a running producer, takes
``state_dict()`` and goes; a new process-like consumer given it by ``load_state_dict()`` reads the rest of that epoch.
Measured against a consumer that simply joins the same producer: the time to its first batch, the samples the
producer loads again for it (the rest of its epoch, on a lane of its own), and the rest of the epoch's time.

    python3 resume_bench.py [--samples 20000] [--delay-ms 2] [--runs 5]

Needs the tensorsocket launcher (on the PATH, or TENSORSOCKET_LAUNCHER). Prints one JSON line per run and a summary of medians.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from tensorsocket_client import TensorConsumer
from tensorsocket_client._status import query
from tensorsocket_client.directory import launcher_command

NAME = "resume-bench"


def _ids(batch):
    return batch["id"].tolist()


def _first_batch_s(make):
    """Seconds from nothing to the first batch of a consumer ``make()`` returns ready to iterate; the consumer and its
    first epoch's iterator."""
    t0 = time.monotonic()
    c = make()
    it = iter(c)
    first = next(it)
    return time.monotonic() - t0, c, it, first


def run(samples, batch_size):
    trial = TensorConsumer(NAME, batch_size=batch_size)
    for _ in trial:  # an epoch read whole first: the checkpoint's epoch is not the producer's first
        pass
    before = []
    for b in trial:
        before += _ids(b)
        if len(before) >= samples // 2:
            break
    state = trial.state_dict()
    trial.close()

    def resumed():
        c = TensorConsumer(NAME, batch_size=batch_size)
        c.load_state_dict(state)
        return c

    lane_before = _lane_samples()
    resume_s, c, it, first = _first_batch_s(resumed)
    rest = _ids(first)
    t = time.monotonic()
    for b in it:
        rest += _ids(b)
    rest_s = time.monotonic() - t + resume_s
    loaded_again = _lane_samples() - lane_before
    whole = sorted(before + rest) == list(range(samples))
    c.close()
    join_s, j, it, first = _first_batch_s(lambda: TensorConsumer(NAME, batch_size=batch_size))
    t = time.monotonic()
    n = len(first["id"])
    for b in it:
        n += len(b["id"])
    epoch_s = time.monotonic() - t + join_s
    j.close()
    return dict(resume_first_batch_ms=resume_s * 1000, join_first_batch_ms=join_s * 1000, rest=len(rest),
                rest_s=rest_s, epoch_s=epoch_s, epoch_samples=n, samples_loaded_again=loaded_again, whole=whole)


_lanes_seen = {}


def _lane_samples():
    """Samples the producer's lanes loaded again so far, over every consumer it listed while it served."""
    s = query(NAME)
    for c in s.consumers if s else ():
        _lanes_seen[c.id] = c.lane_samples
    return sum(_lanes_seen.values())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--delay-ms", type=float, default=2.0, help="the loader's time per producer batch of 64")
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    made = None
    if "TENSORSOCKET_BASE" not in os.environ:  # a base of its own, removed at the end
        made = os.environ["TENSORSOCKET_BASE"] = tempfile.mkdtemp(prefix="resume-bench-", dir="/dev/shm")
    argv, env = launcher_command()
    serve = subprocess.Popen(argv + ["serve", "--name", NAME, "--synthetic",
                              "samples=%d,shape=3x32x32,dtype=float32,seed=1" % a.samples, "--batch-size", "64",
                              "--epochs", "0", "--loader-delay-ms", str(a.delay_ms), "--start-grace-ms", "0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    pacer = subprocess.Popen([sys.executable, "-m", "tensorsocket_client", "consume", "--name", NAME, "--batch-size",
                              "64"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        results = []
        for _ in range(a.runs):
            r = run(a.samples, a.batch_size)
            print(json.dumps(r), flush=True)
            results.append(r)
        med = {k: statistics.median(r[k] for r in results) for k in results[0] if k != "whole"}
        print(json.dumps(dict(summary=True, runs=a.runs, samples=a.samples, all_whole=all(r["whole"] for r in results),
                              **med)), flush=True)
    finally:
        pacer.kill()
        pacer.wait()
        serve.terminate()
        serve.wait()
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    main()
