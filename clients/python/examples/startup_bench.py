"""How long a trial waits for its first batch: a private torch DataLoader against ``share()`` of the same loader, cold
(no producer runs: this trial's share() starts it) and warm (a producer of the name lingers from an earlier trial).

    /usr/bin/python3 clients/python/examples/startup_bench.py [--rounds 5] [--images 1500] [--before] [--c2] [--trace]

Each trial is a new Python process, timed from its launch to its first batch in hand: it imports torch and
torchvision, builds the loader of sweep_bench.py (ImageFolder over photo-like 500x375 JPEGs, RandomResizedCrop(224),
flip, normalise, batch 32, shuffled, 2 workers) or calls ``share()`` with that factory, and takes one batch. Rounds
interleave the cases; medians, minima and maxima are printed. ``--c2`` adds a cold share whose producer's JVM compiles
with C2 too, as the JVM does by default (a feeder's producer compiles with C1 only). ``--before`` adds the share path
as it was before the start-up work, rebuilt from switches: a new Python for the feeder
(TENSORSOCKET_SHARE_START=spawn), the JVM without its ahead-of-time cache (TENSORSOCKET_NO_AOT=1) and the 2 s start
grace. ``--trace`` prints, after each cold trial, where its time went: its imports, then the producer's JVM listening,
the feeder's declaration, the arena sized and made (serving), the trial's join, each from the share log's millisecond
lines, and its first batch.
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
from pathlib import Path
from typing import Tuple

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parent


def trial(mode: str, root: str, name: str, grace: float) -> None:
    """One trial: prints the wall time its first batch arrived."""
    import torch  # noqa: F401  (what every trial imports first)
    import torchvision  # noqa: F401
    imported = time.time()

    sys.path.insert(0, str(HERE))
    kwargs = {"root": root, "workers": 2}
    if mode == "private":
        import sweep_bench
        loader = sweep_bench.loader(**kwargs)
    else:
        from tensorsocket_client import share
        options = {"start_grace": grace} if grace else None
        loader = share(name, "sweep_bench:loader", batch_size=32, kwargs=kwargs, linger=20.0,
                       producer_options=options)
    batch = next(iter(loader))
    print(json.dumps({"first_batch": time.time(), "imported": imported, "shape": list(batch[0].shape)}), flush=True)
    if mode != "private":
        loader.dataset.close()


def run_trial(mode: str, root: str, name: str, base: str, env_extra: dict, grace: float) -> Tuple[float, dict]:
    env = dict(os.environ, TENSORSOCKET_BASE=base, PYTHONPATH=os.pathsep.join([str(CLIENT), str(HERE)]))
    env.update(env_extra)
    launched = time.time()
    out = subprocess.run([sys.executable, __file__, "--trial", mode, "--root", root, "--name", name, "--grace",
                          str(grace)], env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit("%s trial failed:\n%s" % (mode, out.stderr[-3000:]))
    line = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])
    line["launched"] = launched
    return line["first_batch"] - launched, line


# What a cold start's share log says, by the words of its lines, in the order they come.
PHASES = (("listening", "waits up to"), ("declared", " declared "), ("arena sized", "arena of producer"),
          ("serving", " serves "), ("trial joined", " joined at "))


def trace(base: str, name: str, trial: dict) -> str:
    """A cold trial's phases, seconds after its launch: its imports done, then what its share log (millisecond lines of
    the producer's JVM) says, then its first batch."""
    marks = [("imports done", trial["imported"])]
    day = time.strftime("%Y-%m-%d", time.localtime(trial["launched"]))
    try:
        lines = (Path(base) / (".%s.share.log" % name)).read_text().splitlines()
    except OSError:
        lines = []
    for label, words in PHASES:
        for ln in lines:
            if words in ln and len(ln) > 12 and ln[2] == ":" and ln[8] == ".":
                clock = time.mktime(time.strptime(day + " " + ln[:8], "%Y-%m-%d %H:%M:%S")) + int(ln[9:12]) / 1000
                marks.append((label, clock))
                break
    marks.append(("first batch", trial["first_batch"]))
    return ", ".join("%s +%.2f" % (label, t - trial["launched"]) for label, t in marks)


def wait_gone(base: str, name: str, timeout: float = 60) -> None:
    """Until no producer of ``name`` runs (its linger ran out), so that the next cold trial starts one."""
    d = Path(base) / name
    deadline = time.time() + timeout
    while d.exists() and time.time() < deadline:
        time.sleep(0.1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trial", choices=["private", "shared"])
    p.add_argument("--root")
    p.add_argument("--name", default="startup")
    p.add_argument("--grace", type=float, default=0.0)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--images", type=int, default=1500)
    p.add_argument("--before", action="store_true", help="Also time the share path as it was before (see above).")
    p.add_argument("--c2", action="store_true",
                   help="Also time a cold share whose producer compiles with C2 as well (the JVM's default), not C1 only.")
    p.add_argument("--trace", action="store_true",
                   help="After each cold trial, print its phases (seconds after its launch) from its share log.")
    a = p.parse_args()
    if a.trial:
        trial(a.trial, a.root, a.name, a.grace)
        return
    sys.path.insert(0, str(HERE))
    import sweep_bench
    root = str(sweep_bench.make_images(Path.home() / ".cache" / "tensorsocket" / "sweep-jpegs", a.images))
    base = tempfile.mkdtemp(prefix="tensorsocket-startup-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    cases = [("private", "private", {}, 0.0), ("shared cold", "shared", {}, 0.0), ("shared warm", "shared", {}, 0.0)]
    if a.before:
        before = {"TENSORSOCKET_SHARE_START": "spawn", "TENSORSOCKET_NO_AOT": "1"}
        cases += [("before, cold", "shared", before, 2.0), ("before, warm", "shared", before, 2.0)]
    if a.c2:
        cases += [("cold, C2", "shared", {"TENSORSOCKET_JAVA_OPTS": "-XX:TieredStopAtLevel=4"}, 0.0)]
    times = {c[0]: [] for c in cases}
    try:
        run_trial("private", root, "", base, {}, 0.0)  # the page cache holds the images and the libraries
        for r in range(a.rounds):
            cold_name = None
            for label, mode, env, grace in cases:
                if "warm" in label:
                    name = cold_name  # the producer the cold trial just before started, lingering
                else:
                    name = "%s-%d-%d" % (a.name, r, len(times[label]) + 100 * cases.index((label, mode, env, grace)))
                    wait_gone(base, name)
                t, line = run_trial(mode, root, name, base, env, grace)
                times[label].append(t)
                if "cold" in label:
                    cold_name = name
                print("round %d %-14s %.2f s" % (r + 1, label, t), flush=True)
                if a.trace and "cold" in label:
                    print("    " + trace(base, name, line), flush=True)
    finally:
        subprocess.run([str(CLIENT.parent.parent / "bin" / "tensorsocket"), "clean"], env=dict(os.environ,
                       TENSORSOCKET_BASE=base), capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    print("\nfirst batch after the trial's launch (s), %d rounds, %d JPEGs:" % (a.rounds, a.images))
    print("%-14s %7s %7s %7s" % ("case", "median", "min", "max"))
    for label, ts in times.items():
        print("%-14s %7.2f %7.2f %7.2f" % (label, statistics.median(ts), min(ts), max(ts)))
    private = statistics.median(times["private"])
    for label in times:
        if label != "private":
            print("%s: %+.2f s against a private DataLoader" % (label, statistics.median(times[label]) - private))


if __name__ == "__main__":
    main()
