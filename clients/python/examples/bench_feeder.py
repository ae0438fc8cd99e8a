"""Benchmark: a Python feeder (TensorProducer over ready-made torch batches) against the Java synthetic
source, each serving batches of 64x3x224x224 float32 (38.5 MB) and of 64x3x32x32 float32 (0.8 MB) to 1 and 4
consumers, in one run.

    python3 clients/python/examples/bench_feeder.py [--batches 400] [--consumers 1,4] [--shapes 3x224x224,3x32x32]

Needs the Java build (bin/tensorsocket) and torch. Consumers touch one value per batch (zero-copy reads), so
the figure is what the producer side delivers: Java consumers by default (``--consumer java``, the bench module's
BenchConsumer, its rate counted after a warm-up of 10 batches), or Python TensorConsumers (``--consumer python``,
which for small batches are slower than the feeder and so measure themselves). The feeder's loader
yields the same few preallocated tensors, so its cost is the feeder itself: one copy of each batch into
its slot. Its limit, measured in the same run: a bare numpy copy of those batches in turn into shared memory (a
mapped file in /dev/shm, as a slot is), the feeder's figure printed beside it as a fraction.
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
sys.path.insert(0, str(CLIENT))
from tensorsocket_bundle import JVM_OPTIONS  # noqa: E402 (the launcher's JVM options, for Java consumers)

BATCH = 64
PREPARED = 4  # batches the feeder's loader prepares and yields in turn

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
shape = tuple(int(x) for x in sys.argv[3].split("x"))
made = [(torch.rand(%d, *shape), torch.randint(0, 1000, (%d,))) for _ in range(%d)]
def epoch(e):
    for i in range(batches):
        yield made[i %% len(made)]
TensorProducer(sys.argv[1], None, epochs=1, samples_per_epoch=batches * %d, epoch_loader=epoch,
               names=("data", "label"), start_producer=False).run()
""" % (BATCH, BATCH, PREPARED, BATCH)


def java_consumer(d, batches, cp):
    java = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "java")
    return [java] + JVM_OPTIONS + ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp,
            "io.tensorsocket.bench.BenchConsumer", str(d), str(BATCH), "1", "none", "0", str(min(10, batches // 4)), "ring"]


def rate_of(output, kind):
    """Batches/s from one consumer's output: BenchConsumer's RESULT line, or the Python consumer's JSON."""
    lines = output.decode().strip().splitlines()
    if kind == "java":
        result = dict(kv.split("=") for kv in next(line for line in lines if line.startswith("RESULT"))[7:].split())
        return float(result["batches_per_s"])
    r = json.loads(lines[-1])
    return r["batches"] / r["seconds"]


def run(source, consumers, batches, shape, env, a):
    name = "bench-%s-%d" % (source, consumers)
    serve = [a.launcher, "serve", "--name", name, "--min-consumers", str(consumers)]
    if source == "java":
        serve += ["--synthetic", "samples=%d,shape=%s,dtype=float32,seed=1" % (batches * BATCH, shape),
                  "--batch-size", str(BATCH)]
    else:
        serve += ["--external"]
    err = tempfile.TemporaryFile()
    procs = [subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=err, env=env)]
    try:
        d = Path(env["TENSORSOCKET_BASE"]) / name
        ready = d / ("control.sock" if source == "java" else "feeder.sock")
        deadline = time.monotonic() + 60
        while not ready.exists():
            if time.monotonic() > deadline or procs[0].poll() is not None:
                err.seek(0)
                raise RuntimeError("the producer did not start within 60 s (exit status %s): %s\n%s" % (
                    procs[0].poll(), " ".join(serve), err.read().decode(errors="replace").strip()))
            time.sleep(0.05)
        if source == "python":
            procs.append(subprocess.Popen([sys.executable, "-c", FEEDER, name, str(batches), shape], env=env))
        command = java_consumer(d, batches, a.classpath) if a.consumer == "java" else [sys.executable, "-c", CONSUMER, name]
        cs = [subprocess.Popen(command, stdout=subprocess.PIPE, env=env) for _ in range(consumers)]
        return min(rate_of(c.communicate(timeout=600)[0], a.consumer) for c in cs)
    finally:
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        err.close()


def copy_batches_per_s(dims, seconds=1.0):
    """Batches/s of a bare numpy copy of a batch into a mapped file in /dev/shm, as into a slot, turn by turn into
    as many slots as a feeder's producer has for such batches (10 of 38.5 MB, 64 of 0.8 MB), from the same four
    prepared batches in turn as the feeder's loader yields (for 38.5 MB batches they do not fit the processor's
    cache, one alone partly does), best of 5."""
    import mmap
    sources = [np.random.rand(BATCH, *dims).astype(np.float32) for _ in range(PREPARED)]
    src = sources[0]
    slots = 10 if src.nbytes > (16 << 20) else 64
    with tempfile.TemporaryFile(dir="/dev/shm") as f:
        f.truncate(src.nbytes * slots)
        m = mmap.mmap(f.fileno(), src.nbytes * slots)
        try:
            views = [np.frombuffer(m, np.float32, src.size, i * src.nbytes).reshape(src.shape) for i in range(slots)]
            for v in views:
                np.copyto(v, src)  # every page touched before timing, as the producer's arena is
            best = 0.0
            for _ in range(5):
                n, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < seconds / 5:
                    np.copyto(views[n % slots], sources[n % PREPARED])
                    n += 1
                best = max(best, n / (time.perf_counter() - t0))
            return best
        finally:
            views = v = None  # noqa: F841 (the views must go before the mapping closes)
            m.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=400, help="Batches of 38.5 MB per run (of 0.8 MB: 40 times as many).")
    p.add_argument("--consumers", default="1,4")
    p.add_argument("--shapes", default="3x224x224,3x32x32", help="Sample shapes (float32), one table each.")
    p.add_argument("--consumer", choices=("java", "python"), default="java", help="What the consumers are.")
    p.add_argument("--launcher", default=os.environ.get("TENSORSOCKET_LAUNCHER", str(ROOT / "bin/tensorsocket")),
                   help="The command that starts tensorsocket (default: $TENSORSOCKET_LAUNCHER, else bin/tensorsocket).")
    p.add_argument("--classpath", default="%s:%s/*" % (ROOT / "tensorsocket-cli/target/tensorsocket-cli.jar",
                                                       ROOT / "tensorsocket-cli/target/lib"),
                   help="The Java consumers' class path (default: the built command line's jar and its libraries).")
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
    for shape in a.shapes.split(","):
        dims = tuple(int(x) for x in shape.split("x"))
        mb = BATCH * int(np.prod(dims)) * 4 / 1e6
        copy = copy_batches_per_s(dims)
        print("batch: %d x %s float32 = %.1f MB; a bare numpy copy of a batch into shared memory here: %.1f batches/s "
              "(%.2f GB/s)" % (BATCH, shape, mb, copy, copy * mb / 1e3))
        print("| source | consumers | batches/s | GB/s delivered per consumer | of the bare copy |")
        print("|---|---|---|---|---|")
        batches = a.batches if mb > 16 else a.batches * 40
        for source in ("java", "python"):
            for n in [int(x) for x in a.consumers.split(",")]:
                rate = run(source, n, batches, shape, env, a)
                label = "Java synthetic source" if source == "java" else "Python feeder (TensorProducer)"
                print("| %s | %d | %.1f | %.2f | %.2f |" % (label, n, rate, rate * mb / 1e3, rate / copy), flush=True)
                print(json.dumps(dict(metric="feeder_batches_per_s", source=source, consumers=n, shape=shape,
                                      consumer=a.consumer,
                                      value=round(rate, 1), bare_copy_batches_per_s=round(copy, 1),
                                      of_bare_copy=round(rate / copy, 3))), flush=True)


if __name__ == "__main__":
    main()
