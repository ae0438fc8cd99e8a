"""Start-up time of ``tensorsocket serve``: from starting the command to its control socket accepting a
connection, median of N runs per launcher, each launcher measured in the same run.

    python3 tensorsocket-wheel/startup.py [--runs 7] LAUNCHER...     # e.g. env/bin/tensorsocket bin/tensorsocket
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def once(launcher, base):
    sock = Path(base) / "startup" / "control.sock"
    started = time.perf_counter()
    p = subprocess.Popen([launcher, "serve", "--name", "startup", "--synthetic",
                          "samples=1000,shape=16,dtype=float32,seed=1", "--batch-size", "10"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, TENSORSOCKET_BASE=base))
    try:
        while True:
            if p.poll() is not None:
                raise SystemExit("%s serve exited with %d before it was ready" % (launcher, p.returncode))
            if time.perf_counter() - started > 60:
                raise SystemExit("%s serve was not ready within 60 s" % launcher)
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(sock))
                return time.perf_counter() - started
            except OSError:
                time.sleep(0.002)
    finally:
        p.terminate()
        p.wait(timeout=30)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--runs", type=int, default=7)
    a.add_argument("launchers", nargs="+")
    args = a.parse_args()
    base = tempfile.mkdtemp(prefix="ts-startup-", dir="/dev/shm")
    try:
        results = {l: [] for l in args.launchers}
        for _ in range(args.runs):  # interleaved, so that a slow moment of the machine falls on all of them
            for l in args.launchers:
                results[l].append(once(l, base))
        for l, times in results.items():
            print(json.dumps(dict(metric="serve_startup_s", launcher=l, median=round(statistics.median(times), 3),
                                  min=round(min(times), 3), max=round(max(times), 3), runs=len(times))))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
