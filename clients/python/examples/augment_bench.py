"""A sweep over model size and augmentation strength, as a PyTorch user runs it: four trials launched in the same
second, each with its natural private DataLoader (torchvision ImageFolder with its own PIL transform, ``num_workers``
workers) against the same four trials each calling ``share(..., augment=SampleAugment(its transform))`` (one
producer decodes, keeping the decoded images, ``cache_mb``; each trial augments in workers of its own). Prints the
sweep's wall time and the CPU seconds of every process (trials, their workers, the feeder and the Java producer), per
run and as ratios, the runs interleaved.

    /usr/bin/python3 clients/python/examples/augment_bench.py                      # CPU training
    /usr/bin/python3 clients/python/examples/augment_bench.py --step-ms 40         # a fixed step standing for a GPU
    /usr/bin/python3 clients/python/examples/augment_bench.py --same --step-ms 5   # one augmentation, loader-bound

The trials: a small CNN and a slimmed ResNet, each with weak augmentation (RandomResizedCrop(224, scale=(0.6, 1)),
a flip) and strong (scale (0.08, 1), a flip, ColorJitter(0.4, 0.4, 0.4)), then ToTensor and Normalize; batch 32,
shuffled, ``--epochs`` epochs over photo-like 500x375 JPEGs (sweep_bench.py's). ``--step-ms`` replaces training by a
sleep per step. ``--same``: every trial augments weakly and the shared run is a plain ``share()`` of the factory
(the producer decodes and augments once for all). Needs torch, torchvision and the client.
"""
import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # sweep_bench, beside this script

import sweep_bench  # noqa: E402

NAME = "augment-bench"
TRIALS = (("cnn", "weak"), ("cnn", "strong"), ("resnet", "weak"), ("resnet", "strong"))


def transform(strength: str):
    """A trial's own PIL transform, as it gives its private ImageFolder."""
    from torchvision import transforms as T
    ops = [T.RandomResizedCrop(224, scale=(0.6, 1.0) if strength == "weak" else (0.08, 1.0)),
           T.RandomHorizontalFlip()]
    if strength == "strong":
        ops.append(T.ColorJitter(0.4, 0.4, 0.4))
    return T.Compose(ops + [T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def photos(root: str, workers: int = 2, strength: str = "weak"):
    """The factory every trial's share() names: the private loader as written (its transform is the one a plain
    share serves; with augment= the producer turns it off)."""
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    return DataLoader(ImageFolder(root, transform=transform(strength)), batch_size=32, shuffle=True,
                      num_workers=workers, persistent_workers=workers > 0)


def model(kind: str):
    """sweep_bench's small CNN, or a slimmed ResNet (three residual stages of 16, 32 and 64 channels)."""
    import torch.nn as nn
    if kind == "cnn":
        return sweep_bench.model()

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                      nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, 2, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return (self.body(x) + self.skip(x)).relu()

    return nn.Sequential(nn.Conv2d(3, 16, 7, 4, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         Block(16, 16), Block(16, 32), Block(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, 10))


def trial(args) -> None:
    """One trial: ``--epochs`` epochs of its loader, training its model (or sleeping ``--step-ms`` a step)."""
    import torch
    torch.set_num_threads(1)
    kind, strength = TRIALS[args.trial]
    if args.same:
        strength = "weak"
    started = time.monotonic()
    if args.mode == "private":
        loader = photos(args.images, args.workers, strength)
    else:
        from tensorsocket_client import share
        from tensorsocket_client.augment import SampleAugment
        augment = None if args.same else SampleAugment(transform(strength), seed=args.trial)
        loader = share(NAME, "augment_bench:photos", batch_size=32, linger=2.0,
                       kwargs={"root": args.images, "workers": args.workers}, cache_mb=args.cache_mb,
                       augment=augment, seed=7)
    m = model(kind)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    samples = 0
    for _ in range(args.epochs):
        for images, labels in loader:
            if args.step_ms > 0:
                time.sleep(args.step_ms / 1000)
            else:
                opt.zero_grad()
                loss_fn(m(images), labels).backward()
                opt.step()
            samples += len(labels)
    if args.mode == "shared":
        loader.dataset.close()
    elapsed = time.monotonic() - started
    print(json.dumps({"trial": args.trial, "samples": samples, "seconds": elapsed,
                      "samples_per_s": samples / elapsed}), flush=True)


def _adopt_orphans() -> None:
    """Makes this process the reaper of its descendants' orphans (the producer share() starts runs in a session of its
    own), so that their CPU time is counted in this process's children's once they end."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def run(args, mode: str) -> dict:
    """The four trials started in the same second; the sweep's wall time until the last one ends, and the CPU time of
    every process it started, the shared producer's included (waited for to end after its linger)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), str(HERE), env.get("PYTHONPATH", "")])
    me = [sys.executable, "-u", __file__, "--images", args.images, "--workers", str(args.workers), "--epochs",
          str(args.epochs), "--step-ms", str(args.step_ms), "--cache-mb", str(args.cache_mb), "--role", "trial",
          "--mode", mode] + (["--same"] if args.same else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    procs = [subprocess.Popen(me + ["--trial", str(i)], env=env, stdout=subprocess.PIPE, text=True)
             for i in range(len(TRIALS))]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=args.epochs * 600)
        if p.returncode != 0:
            raise SystemExit("a %s trial failed with status %d" % (mode, p.returncode))
        results.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.monotonic() - t0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the orphaned producer and feeder, once their linger ran out
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.1)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"mode": mode, "trials": results, "wall": wall, "cpu": cpu}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3, help="epochs each trial reads (default 3)")
    p.add_argument("--step-ms", type=float, default=0, help="a sleep per step in place of training (default 0: train)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers per loader (default 2)")
    p.add_argument("--count", type=int, default=1200, help="JPEGs in the data set (default 1200)")
    p.add_argument("--images", help="an ImageFolder to use instead of the generated JPEGs")
    p.add_argument("--cache-mb", type=float, default=1024, help="the shared producer's decoded cache (default 1024)")
    p.add_argument("--same", action="store_true", help="every trial augments alike; a plain share() serves them")
    p.add_argument("--pairs", type=int, default=1, help="private and shared runs, interleaved (default 1 of each)")
    p.add_argument("--role", choices=("bench", "trial"), default="bench", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=("private", "shared"), help=argparse.SUPPRESS)
    p.add_argument("--trial", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role == "trial":
        return trial(args)
    if args.images is None:
        cache = Path.home() / ".cache" / "tensorsocket" / ("sweep-jpegs-%d" % args.count)
        args.images = str(sweep_bench.make_images(cache, args.count))
    _adopt_orphans()
    runs = [run(args, mode) for _ in range(args.pairs) for mode in ("private", "shared")]
    print("%-8s %-6s %-7s %-7s %10s" % ("mode", "trial", "model", "augment", "samples/s"))
    for r in runs:
        for t in r["trials"]:
            kind, strength = TRIALS[t["trial"]]
            print("%-8s %-6d %-7s %-7s %10.1f" % (r["mode"], t["trial"] + 1, kind, "weak" if args.same else strength,
                                                  t["samples_per_s"]))
        print("%-8s sweep: %.1f s wall, %.1f CPU s" % (r["mode"], r["wall"], r["cpu"]))
    private = [r for r in runs if r["mode"] == "private"]
    shared = [r for r in runs if r["mode"] == "shared"]
    wall = [s["wall"] / p["wall"] for p, s in zip(private, shared)]
    cpu = [s["cpu"] / p["cpu"] for p, s in zip(private, shared)]
    print("\nShared against the natural private sweep: %s of its wall time, %s of its CPU"
          % (", ".join("%.2fx" % w for w in wall), ", ".join("%.2fx" % c for c in cpu)))
    print(json.dumps({"private_wall": [r["wall"] for r in private], "shared_wall": [r["wall"] for r in shared],
                      "private_cpu": [r["cpu"] for r in private], "shared_cpu": [r["cpu"] for r in shared],
                      "wall_ratio": wall, "cpu_ratio": cpu}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
