"""Trials of different speeds on one producer: each trial's samples/s shared against alone.

    python3 pace_bench.py [--steps 5,5,25] [--epochs 4] [--samples 2000] [--batch-size 20] [--serve-options "..."]

Starts a synthetic producer (`serve --synthetic`) and one `consume --step-ms S` per step (a trial whose training step
takes S ms), first each trial alone on a producer of its own, then all together on one producer, and prints one JSON
line per trial (alone, shared, and shared / alone) and a summary. A fast trial held by a slow one shows as a ratio
well below 1. The trials read --epochs epochs each; the producer serves until the last has.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def launcher(arg):
    if arg:
        return [arg]
    return [str(ROOT / "bin" / "tensorsocket")]


def run(cmd, steps, args, base, name):
    """Serves NAME and runs one consumer per step on it, all at once; returns each one's mean samples/s per epoch."""
    env = dict(os.environ, TENSORSOCKET_BASE=str(base))
    spec = "samples=%d,shape=%s,dtype=float32,seed=1" % (args.samples, args.shape)
    producer = subprocess.Popen(cmd + ["serve", "--name", name, "--synthetic", spec, "--batch-size",
                                       str(args.batch_size), "--epochs", "0", "--min-consumers", str(len(steps)),
                                       "--idle-timeout-s", "2"] + shlex.split(args.serve_options),
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        trials = [subprocess.Popen(cmd + ["consume", "--name", name, "--batch-size", str(args.batch_size),
                                          "--epochs", str(args.epochs), "--step-ms", str(s)],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for s in steps]
        rates = []
        for t in trials:
            out, err = t.communicate(timeout=600)
            if t.returncode != 0:
                raise SystemExit("a trial failed: %s" % err.strip().splitlines()[-1:])
            epochs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            # the first epoch holds the start (and the wait for the others): the later ones are the pace
            later = epochs[1:] or epochs
            rates.append(sum(e["samples_per_s"] for e in later) / len(later))
        return rates
    finally:
        producer.terminate()
        producer.wait(30)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", default="5,5,25", help="each trial's step in ms (default 5,5,25)")
    p.add_argument("--epochs", type=int, default=4, help="epochs each trial reads (default 4)")
    p.add_argument("--samples", type=int, default=2000, help="samples per epoch (default 2000)")
    p.add_argument("--shape", default="3x32x32", help="sample shape (default 3x32x32)")
    p.add_argument("--batch-size", type=int, default=20, help="batch size of producer and trials (default 20)")
    p.add_argument("--launcher", help="the tensorsocket command (default: this checkout's bin/tensorsocket)")
    p.add_argument("--serve-options", default="",
                   help="more options for every producer, as one string (say '--rubber-band 400 --slots 512')")
    args = p.parse_args()
    steps = [float(s) for s in args.steps.split(",")]
    cmd = launcher(args.launcher)
    base = Path(tempfile.mkdtemp(prefix="tensorsocket-pace-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        t0 = time.monotonic()
        alone = [run(cmd, [s], args, base, "alone%d" % i)[0] for i, s in enumerate(steps)]
        shared = run(cmd, steps, args, base, "shared")
        for s, a, sh in zip(steps, alone, shared):
            print(json.dumps({"step_ms": s, "alone_samples_per_s": round(a, 1), "shared_samples_per_s": round(sh, 1),
                              "shared_of_alone": round(sh / a, 3)}), flush=True)
        print(json.dumps({"summary": True, "steps": steps, "epochs": args.epochs, "samples": args.samples,
                          "slowest_shared_of_alone": round(min(sh / a for a, sh in zip(alone, shared)), 3),
                          "wall_s": round(time.monotonic() - t0, 1)}), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
