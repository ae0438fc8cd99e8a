"""Trials of different speeds on one producer: each trial's samples/s shared against alone.

    python3 pace_bench.py [--steps 5,5,25] [--epochs 4] [--samples 2000] [--batch-size 20] [--serve-options "..."]
                          [--jpegs N | --images DIR | --feeder] [--crop 224]

Starts a producer (`serve --synthetic`, or with --jpegs/--images the JPEG pipeline: `serve --images`, each image
decoded, RandomResizedCrop(--crop) and flipped every epoch, decoded once where --serve-options give it a cache; with
--feeder a PyTorch DataLoader of one worker over a map-style data set of synthetic samples, fed by this file's own
--feed through TensorProducer, which starts its producer and loads its lanes) and one `consume --step-ms S` per step
(a trial whose training step takes S ms), first each trial alone on a producer of its own, then all together on one
producer, and prints one JSON line per trial (alone, shared, and shared / alone, each the mean of its epochs after the
first; and each shared epoch's samples/s, where a move to a lane shows) and a summary with the producers' CPU
seconds: the alone runs' together (what private pipelines would cost) and each, and the shared run's, each producer's
process tree (a feeder's workers and its Java producer included). A fast trial held by a slow one shows as a ratio
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


def cpu_seconds(pid):
    """User and system CPU seconds process PID and its descendants have spent so far (Linux): those alive, and those
    that ended and were waited for; 0 where /proc does not say."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
            except (OSError, IndexError, ValueError):
                pass
    tree, ticks = {pid}, 0
    grew = True
    while grew:
        grew = False
        for p, (ppid, _) in stats.items():
            if ppid in tree and p not in tree:
                tree.add(p)
                grew = True
    for p in tree:
        ticks += stats.get(p, (0, 0))[1]
    return ticks / os.sysconf("SC_CLK_TCK")


def feed(name, args, consumers):
    """This file's --feed: a PyTorch DataLoader (one worker) over a map-style data set of synthetic samples, fed into
    a producer it starts, for --epochs epochs; returns once its lanes are done."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    shape = tuple(int(d) for d in args.shape.split("x"))

    class Samples(Dataset):
        def __len__(self):
            return args.samples

        def __getitem__(self, index):
            return torch.full(shape, float(index)), index

    from tensorsocket_client import TensorProducer
    loader = DataLoader(Samples(), batch_size=args.batch_size, shuffle=True, num_workers=1, persistent_workers=True)
    options = dict(a.split("=", 1) for a in shlex.split(args.serve_options))
    TensorProducer(name, loader, epochs=args.epochs, min_consumers=consumers, start_grace=0, **options).run()
    # its workers, its lanes' workers and its Java producer, still serving the last batches, are its descendants
    print(json.dumps({"feeder_cpu_s": cpu_seconds(os.getpid())}), flush=True)
    return 0


def source(args):
    """The producer's source options: the JPEG pipeline over args.images, else synthetic samples."""
    if args.images:
        return ["--images", args.images, "--transform", "RandomResizedCrop(%d), RandomHorizontalFlip(0.5)" % args.crop]
    return ["--synthetic", "samples=%d,shape=%s,dtype=float32,seed=1" % (args.samples, args.shape)]


def trial_command(cmd, name, args, step_ms):
    """A trial of step STEP_MS: `consume --step-ms`, which checks every synthetic sample, or for images and a feeder's
    samples (which it cannot check) this file's own --trial, a Python consumer that counts each epoch's samples."""
    if not args.images and not args.feeder:
        return cmd + ["consume", "--name", name, "--batch-size", str(args.batch_size), "--epochs", str(args.epochs),
                      "--step-ms", str(step_ms)]
    return [sys.executable, __file__, "--trial", name, "--batch-size", str(args.batch_size), "--epochs",
            str(args.epochs), "--step-ms", str(step_ms)]


def trial(name, batch_size, epochs, step_ms):
    """Reads EPOCHS epochs of NAME, sleeping STEP_MS per batch (the training step); one JSON line per epoch with its
    samples/s. Exits 1 on an epoch whose samples are not the producer's epoch."""
    from tensorsocket_client import TensorConsumer
    with TensorConsumer(name, batch_size=batch_size) as consumer:
        for epoch in range(epochs):
            samples = 0
            t0 = time.monotonic()
            for batch in consumer:
                samples += len(batch)
                time.sleep(step_ms / 1000)
            seconds = time.monotonic() - t0
            expected = consumer.samples_per_epoch
            print(json.dumps({"epoch": epoch, "samples": samples, "expected": expected,
                              "samples_per_s": round(samples / seconds, 1)}), flush=True)
            if samples != expected:
                return 1
    return 0


def run(cmd, steps, args, base, name):
    """Serves NAME and runs one consumer per step on it, all at once; returns each one's mean samples/s over its epochs
    after the first with each epoch's samples/s, and the producer's CPU seconds."""
    env = dict(os.environ, TENSORSOCKET_BASE=str(base))
    if args.feeder:
        serve = [sys.executable, __file__, "--feed", name, "--consumers", str(len(steps))] + [
            "--%s=%s" % (k, getattr(args, k.replace("-", "_"))) for k in ("epochs", "samples", "shape", "batch-size")
        ] + ["--serve-options=" + args.serve_options]
    else:
        serve = cmd + ["serve", "--name", name] + source(args) + [
            "--batch-size", str(args.batch_size), "--epochs", "0", "--min-consumers", str(len(steps)),
            "--idle-timeout-s", "2"] + shlex.split(args.serve_options)
    producer = subprocess.Popen(serve, env=env, stdout=subprocess.PIPE if args.feeder else subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    try:
        trials = [subprocess.Popen(trial_command(cmd, name, args, s), env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
                  for s in steps]
        rates = []
        for t in trials:
            out, err = t.communicate(timeout=600)
            if t.returncode != 0:
                raise SystemExit("a trial failed: %s" % err.strip().splitlines()[-1:])
            epochs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            # the first epoch holds the start (and the wait for the others): the later ones are the pace
            later = epochs[1:] or epochs
            rates.append((sum(e["samples_per_s"] for e in later) / len(later), [e["samples_per_s"] for e in epochs]))
        if args.feeder:
            out, err = producer.communicate(timeout=120)  # it ends once its lanes are done, and says what it spent
            said = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            if producer.returncode != 0 or not said:
                raise SystemExit("the feeder failed: %s" % err.strip().splitlines()[-3:])
            return rates, said[-1]["feeder_cpu_s"]
        return rates, cpu_seconds(producer.pid)  # the launcher execs the JVM: this is the producer's process
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
    p.add_argument("--trial", help=argparse.SUPPRESS)  # the images' trial process: reads this producer
    p.add_argument("--step-ms", type=float, help=argparse.SUPPRESS)
    p.add_argument("--feed", help=argparse.SUPPRESS)  # the feeder's process: feeds this producer
    p.add_argument("--consumers", type=int, help=argparse.SUPPRESS)
    images = p.add_mutually_exclusive_group()
    images.add_argument("--jpegs", type=int, help="serve N photo-like 500x375 JPEGs through the JPEG pipeline (made once,"
                        " cached in ~/.cache/tensorsocket/sweep-jpegs-N)")
    images.add_argument("--images", help="serve this ImageFolder through the JPEG pipeline")
    images.add_argument("--feeder", action="store_true", help="a PyTorch DataLoader feeds the producer "
                        "(TensorProducer); --serve-options are its producer options, as 'slots=440 lanes=0'")
    p.add_argument("--crop", type=int, default=224, help="with --jpegs or --images: the side RandomResizedCrop makes"
                   " (default 224)")
    args = p.parse_args()
    if args.trial:
        return trial(args.trial, args.batch_size, args.epochs, args.step_ms)
    if args.feed:
        return feed(args.feed, args, args.consumers)
    if args.jpegs:
        from sweep_bench import make_images  # beside this file; needs PIL
        args.images = str(make_images(Path.home() / ".cache" / "tensorsocket" / ("sweep-jpegs-%d" % args.jpegs),
                                      args.jpegs))
    steps = [float(s) for s in args.steps.split(",")]
    cmd = launcher(args.launcher)
    base = Path(tempfile.mkdtemp(prefix="tensorsocket-pace-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        t0 = time.monotonic()
        alone_runs = [run(cmd, [s], args, base, "alone%d" % i) for i, s in enumerate(steps)]
        alone = [rates[0][0] for rates, _ in alone_runs]
        shared_runs, shared_cpu = run(cmd, steps, args, base, "shared")
        shared = [mean for mean, _ in shared_runs]
        for s, a, (sh, each) in zip(steps, alone, shared_runs):
            print(json.dumps({"step_ms": s, "alone_samples_per_s": round(a, 1), "shared_samples_per_s": round(sh, 1),
                              "shared_of_alone": round(sh / a, 3), "shared_epochs_samples_per_s": each}), flush=True)
        print(json.dumps({"summary": True, "steps": steps, "epochs": args.epochs,
                          "source": "images:%s, RandomResizedCrop(%d)" % (args.images, args.crop) if args.images else
                          ("feeder:" if args.feeder else "synthetic:") + str(args.samples),
                          "slowest_shared_of_alone": round(min(sh / a for a, sh in zip(alone, shared)), 3),
                          "producer_cpu_s_alone": round(sum(cpu for _, cpu in alone_runs), 2),
                          "producer_cpu_s_each_alone": [round(cpu, 2) for _, cpu in alone_runs],
                          "producer_cpu_s_shared": round(shared_cpu, 2),
                          "wall_s": round(time.monotonic() - t0, 1)}), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
