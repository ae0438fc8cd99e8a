"""K training jobs over one JPEG data set: K private torch DataLoaders against one DataLoader shared through
TensorSocket's feeder. Prints samples/s per job and in all, and CPU seconds per sample with every process
counted (the jobs, their DataLoader workers, the feeder and the Java producer).

    /usr/bin/python3 clients/python/examples/sweep_bench.py                  # decoding dominates
    /usr/bin/python3 clients/python/examples/sweep_bench.py --step-ms 150    # training dominates
    /usr/bin/python3 clients/python/examples/sweep_bench.py --cache-mb 512   # and shared with decoding once

The pipeline is what a PyTorch user runs: torchvision ImageFolder over photo-like 500x375 JPEGs (made once,
cached in ~/.cache/tensorsocket/sweep-jpegs), RandomResizedCrop(224), RandomHorizontalFlip, ToTensor,
Normalize, batch 32, shuffled, num_workers=2. Each job trains a small CNN (one thread) for --seconds after its
first batch; --step-ms adds a sleep per step in place of a GPU's work. --cache-mb adds a third run, shared with the
feeder's decoded-sample cache (cache_mb: each JPEG decoded once, the augmentation every epoch). Needs torch,
torchvision and the client
(run from a checkout, or with the client installed; the feeder starts the Java producer).
"""
import argparse
import faulthandler
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "sweep-bench"


def make_images(folder: Path, count: int, classes: int = 10) -> Path:
    """Photo-like JPEGs (smooth gradients, shapes and noise), about 500x375, in class folders."""
    done = folder / (".done-%d" % count)
    if done.exists():
        return folder
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(7)
    for i in range(count):
        d = folder / ("class%02d" % (i % classes))
        d.mkdir(parents=True, exist_ok=True)
        h, w = 375 + int(rng.integers(-20, 20)), 500 + int(rng.integers(-30, 30))
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        base = rng.uniform(0, 255, 3)
        img = np.stack([base[c] * 0.5 + 60 * np.sin(x / rng.uniform(20, 90) + c) + 60 * np.cos(y / rng.uniform(20, 90))
                        for c in range(3)], axis=-1)
        img += rng.normal(0, 12, img.shape)
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(d / ("%05d.jpg" % i), quality=90)
    done.touch()
    return folder


def dataset(root: str):
    from torchvision import datasets, transforms
    t = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    return datasets.ImageFolder(root, transform=t)


def loader(root: str, workers: int):
    from torch.utils.data import DataLoader
    return DataLoader(dataset(root), batch_size=32, shuffle=True, num_workers=workers, drop_last=False)


def model():
    import torch.nn as nn
    return nn.Sequential(nn.Conv2d(3, 8, 7, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10))


def train(batches, seconds: float, step_ms: float) -> dict:
    """Trains on ``batches`` (an endless iterator of (images, labels)) for ``seconds`` after the first batch."""
    import torch
    torch.set_num_threads(1)
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    samples, started, waited = 0, None, 0.0
    asked = time.monotonic()
    for images, labels in batches:
        now = time.monotonic()
        if started is None:
            started = now
        else:
            waited += now - asked
        opt.zero_grad()
        loss_fn(m(images), labels).backward()
        opt.step()
        if step_ms > 0:
            time.sleep(step_ms / 1000)
        samples += len(labels)
        asked = time.monotonic()
        if asked - started >= seconds:
            break
    elapsed = time.monotonic() - started
    return {"samples": samples, "seconds": elapsed, "samples_per_s": samples / elapsed, "wait": waited / elapsed}


def epochs_of(make_epoch):
    while True:
        for b in make_epoch():
            yield b


def job(args) -> None:
    """One training job: its own DataLoader (private) or the shared producer's batches."""
    if args.mode == "private":
        dl = loader(args.images, args.workers)
        result = train(epochs_of(lambda: dl), args.seconds, args.step_ms)
    else:  # shared or cached: the feeder's business
        from tensorsocket_client import TensorConsumer
        with TensorConsumer(NAME, batch_size=32) as consumer:
            def epoch():
                for b in consumer:
                    images, labels = b
                    yield images, labels
            result = train(epochs_of(epoch), args.seconds, args.step_ms)
    print(json.dumps(result), flush=True)


def feed(args) -> None:
    """The shared run's feeder: the same DataLoader, fed until interrupted (Ctrl-C stops its producer)."""
    from tensorsocket_client import TensorProducer
    feed_until_interrupted(lambda: TensorProducer(
        NAME, loader(args.images, args.workers), names=("image", "label"), min_consumers=args.jobs, start_grace=5,
        cache_mb=args.cache_mb if args.mode == "cached" else None))


def feed_until_interrupted(make_producer) -> None:
    """Runs the producer ``make_producer()`` makes, epoch after epoch, until Ctrl-C, then reaps it (so that its CPU
    time is counted); a SIGUSR1 prints every thread's stack, should it not stop when asked."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # The bench stops it with Ctrl-C (SIGINT), also where the bench itself runs in the background of a shell
    # (nohup ... &), whose children inherit SIGINT ignored: then Python would never raise KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    producer = make_producer()
    try:
        while True:
            for _ in producer:
                pass
    except KeyboardInterrupt:
        producer.join(timeout=60)


def run_processes(feeder_command, job_commands, env, timeout: float, what: str):
    """Starts the feeder (if any) and the jobs in the same second, waits for the jobs' last JSON lines, stops the
    feeder with Ctrl-C; returns those lines and the CPU seconds every process spent (the feeder's producer too)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    feeder = None
    if feeder_command is not None:
        feeder = subprocess.Popen(feeder_command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    jobs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, text=True) for c in job_commands]
    results = []
    for p in jobs:
        out, _ = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise SystemExit("a %s job failed with status %d" % (what, p.returncode))
        results.append(json.loads(out.strip().splitlines()[-1]))
    if feeder is not None:
        feeder.send_signal(2)  # Ctrl-C: the feeder stops its producer
        try:
            feeder.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            feeder.send_signal(signal.SIGUSR1)  # its threads' stacks to its stderr (faulthandler), then it goes
            time.sleep(1)
            feeder.kill()
            _, err = feeder.communicate()
            raise SystemExit("the %s run's feeder (pid %d) did not stop within 60 s of its Ctrl-C; its stderr:\n%s"
                             % (what, feeder.pid, err)) from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return results, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(args, mode: str) -> dict:
    """Starts the K jobs (and the feeder) in the same second; waits for the jobs; CPU of every process counted."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    client = HERE.parent
    env["PYTHONPATH"] = str(client) + os.pathsep + env.get("PYTHONPATH", "")
    me = [sys.executable, "-u", __file__, "--images", args.images, "--workers", str(args.workers),
          "--seconds", str(args.seconds), "--step-ms", str(args.step_ms), "--jobs", str(args.jobs)]
    feeder = None if mode == "private" else me + ["--role", "feed", "--mode", mode, "--cache-mb", str(args.cache_mb)]
    results, cpu = run_processes(feeder, [me + ["--role", "job", "--mode", mode]] * args.jobs, env,
                                 args.seconds + 300, mode)
    total = sum(r["samples_per_s"] for r in results)
    samples = sum(r["samples"] for r in results)
    return {"mode": mode, "jobs": results, "total": total, "cpu_per_sample": cpu / samples, "cpu": cpu}


def add_run_arguments(p) -> None:
    """The options of a run of jobs over the JPEG data set."""
    p.add_argument("--seconds", type=float, default=20, help="seconds each job trains after its first batch (default 20)")
    p.add_argument("--step-ms", type=float, default=0, help="sleep per step in place of a GPU's work (default 0)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers per loader (default 2)")
    p.add_argument("--count", type=int, default=500, help="JPEGs in the data set (default 500)")
    p.add_argument("--images", help="an ImageFolder to use instead of the generated JPEGs")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=3, help="training jobs (default 3)")
    add_run_arguments(p)
    p.add_argument("--cache-mb", type=float, default=0,
                   help="also run shared with the feeder's decoded-sample cache of this many MiB (default: not)")
    p.add_argument("--role", choices=("bench", "job", "feed"), default="bench", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=("private", "shared", "cached"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role == "job":
        return job(args)
    if args.role == "feed":
        return feed(args)
    if args.images is None:
        args.images = str(make_images(Path.home() / ".cache" / "tensorsocket" / ("sweep-jpegs-%d" % args.count), args.count))
    runs = [run(args, "private"), run(args, "shared")] + ([run(args, "cached")] if args.cache_mb else [])
    print("%-8s %-4s %10s %14s %6s" % ("mode", "job", "samples/s", "CPU s/sample", "wait"))
    for r in runs:
        for i, j in enumerate(r["jobs"]):
            print("%-8s %-4d %10.1f %14s %5.0f%%" % (r["mode"], i + 1, j["samples_per_s"], "", 100 * j["wait"]))
        print("%-8s %-4s %10.1f %14.4f" % (r["mode"], "all", r["total"], r["cpu_per_sample"]))
    private, shared = runs[:2]
    print("\nshared vs private: %.2fx the samples/s, %.2fx the CPU time per sample (%d jobs, %s)" % (
        shared["total"] / private["total"], shared["cpu_per_sample"] / private["cpu_per_sample"], args.jobs,
        "%.0f ms per step" % args.step_ms if args.step_ms else "decoding dominates"))
    summary = {"private": private["total"], "shared": shared["total"], "ratio": shared["total"] / private["total"],
               "cpu_ratio": shared["cpu_per_sample"] / private["cpu_per_sample"]}
    if args.cache_mb:
        cached = runs[2]
        print("cached vs shared: %.2fx the samples/s, %.2fx the CPU time per sample; cached vs private: %.2fx, %.2fx"
              % (cached["total"] / shared["total"], cached["cpu_per_sample"] / shared["cpu_per_sample"],
                 cached["total"] / private["total"], cached["cpu_per_sample"] / private["cpu_per_sample"]))
        summary.update(cached=cached["total"], cached_ratio=cached["total"] / private["total"],
                       cached_cpu_ratio=cached["cpu_per_sample"] / private["cpu_per_sample"])
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    sys.exit(main())
