"""Three trials that augment differently, over one JPEG data set: each with its private torch DataLoader (decoding
and augmenting in its workers) against one shared loading (decoded once by a feeder) that each trial augments itself
(``SampleAugment``). Prints samples/s per trial and in all, and CPU seconds per sample with every process counted.

    /usr/bin/python3 clients/python/examples/augment_bench.py
    /usr/bin/python3 clients/python/examples/augment_bench.py --step-ms 40     # training dominates

The trials' augmentations are RandomResizedCrop(224) of crop scales (0.08, 1), (0.3, 1) and (0.6, 1), a flip and
normalisation, run on the decoded image: torchvision's ImageFolder over photo-like 500x375 JPEGs (sweep_bench.py's),
each decoded, resized to 256 and centre-cropped to 256x256. Private: a trial's DataLoader over
``SampleAugment.over(data set)`` (``--workers`` processes), which decodes and augments every sample. Shared: one
feeder's DataLoader decodes (its ``--workers``), and each trial augments the samples it reads in its own process;
both give a trial the same tensors. Each trial trains sweep_bench.py's small CNN on one thread for ``--seconds``
after its first batch; ``--step-ms`` adds a sleep per step in place of a GPU's work. Needs torch, torchvision and
the client (the feeder starts the Java producer).
"""
import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # sweep_bench, beside this script

import sweep_bench  # noqa: E402

NAME = "augment-bench"
SCALES = ((0.08, 1.0), (0.3, 1.0), (0.6, 1.0))


class Augment:
    """One trial's augmentation of a decoded 3x256x256 uint8 image: RandomResizedCrop(224, scale), a flip,
    normalisation to float32."""

    def __init__(self, scale):
        from torchvision import transforms
        self.crop = transforms.RandomResizedCrop(224, scale=scale)
        self.flip = transforms.RandomHorizontalFlip()
        self.normalize = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])

    def __call__(self, x):
        return self.normalize(self.flip(self.crop(x)).float().div_(255))


def decoded(root: str):
    """The decoding every trial shares: each JPEG decoded, resized to 256 and centre-cropped, as uint8 CHW."""
    from torchvision import datasets, transforms
    t = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(256), transforms.PILToTensor()])
    from tensorsocket_client.augment import Indexed
    return Indexed(datasets.ImageFolder(root, transform=t))


def augment_of(trial: int):
    from tensorsocket_client.augment import SampleAugment
    return SampleAugment(Augment(SCALES[trial]), seed=trial)


def job(args) -> None:
    """One trial: its private DataLoader, or the shared producer's batches augmented here."""
    from torch.utils.data import DataLoader
    aug = augment_of(args.trial)
    if args.mode == "private":
        data = aug.over(decoded(args.images))
        dl = DataLoader(data, batch_size=32, shuffle=True, num_workers=args.workers)

        def epochs():
            for epoch in range(1 << 30):
                data.set_epoch(epoch)
                for images, labels, _ids in dl:
                    yield images, labels
    else:
        from tensorsocket_client.torch_data import loader
        dl = loader(NAME, 32, names=("image", "label", "index"), augment=aug)

        def epochs():
            while True:
                for images, labels, _ids in dl:
                    yield images, labels
    print(json.dumps(sweep_bench.train(epochs(), args.seconds, args.step_ms)), flush=True)


def feed(args) -> None:
    """The shared run's feeder: the decoding DataLoader, fed until interrupted (Ctrl-C stops its producer)."""
    from torch.utils.data import DataLoader

    from tensorsocket_client import TensorProducer
    # persistent workers: forked once, not at each epoch (the short epochs of a test run would fork all the time, and
    # a Ctrl-C that lands in a fork's after-fork handlers is dropped by Python)
    dl = DataLoader(decoded(args.images), batch_size=32, shuffle=True, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    sweep_bench.feed_until_interrupted(lambda: TensorProducer(
        NAME, dl, names=("image", "label", "index"), min_consumers=len(SCALES), start_grace=5))


def run(args, mode: str) -> dict:
    """Starts the three trials (and the feeder) in the same second; waits for them; CPU of every process counted."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    me = [sys.executable, "-u", __file__, "--images", args.images, "--workers", str(args.workers),
          "--seconds", str(args.seconds), "--step-ms", str(args.step_ms)]
    results, cpu = sweep_bench.run_processes(
        me + ["--role", "feed"] if mode == "shared" else None,
        [me + ["--role", "job", "--mode", mode, "--trial", str(i)] for i in range(len(SCALES))], env,
        args.seconds + 300, mode)
    return {"mode": mode, "trials": results, "total": sum(r["samples_per_s"] for r in results),
            "cpu_per_sample": cpu / sum(r["samples"] for r in results)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sweep_bench.add_run_arguments(p)
    p.add_argument("--role", choices=("bench", "job", "feed"), default="bench", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=("private", "shared"), help=argparse.SUPPRESS)
    p.add_argument("--trial", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role == "job":
        return job(args)
    if args.role == "feed":
        return feed(args)
    if args.images is None:
        cache = Path.home() / ".cache" / "tensorsocket" / ("sweep-jpegs-%d" % args.count)
        args.images = str(sweep_bench.make_images(cache, args.count))
    runs = [run(args, "private"), run(args, "shared")]
    print("%-8s %-6s %-12s %10s %14s" % ("mode", "trial", "crop scale", "samples/s", "CPU s/sample"))
    for r in runs:
        for i, t in enumerate(r["trials"]):
            print("%-8s %-6d %-12s %10.1f" % (r["mode"], i + 1, "(%g, %g)" % SCALES[i], t["samples_per_s"]))
        print("%-8s %-6s %-12s %10.1f %14.4f" % (r["mode"], "all", "", r["total"], r["cpu_per_sample"]))
    private, shared = runs
    print("\nOne decoding shared, each trial augmenting: %.2fx the samples/s of private pipelines, %.2fx the CPU per"
          " sample"
          % (shared["total"] / private["total"], shared["cpu_per_sample"] / private["cpu_per_sample"]))
    print(json.dumps({"private": private["total"], "shared": shared["total"],
                      "ratio": shared["total"] / private["total"],
                      "cpu_ratio": shared["cpu_per_sample"] / private["cpu_per_sample"]}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
