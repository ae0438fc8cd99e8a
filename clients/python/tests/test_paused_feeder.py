"""A producer whose consumers all left keeps its feeder idle: told PAUSED, the feeder ends its loader's workers at once
(a sweep stopped with Ctrl-C lingers without a worker alive), and when a trial comes back it loads on from where it
stood with new ones, every epoch of the newcomer exact."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from bench_launcher import launcher_or_skip
from test_decoded import _children

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - the CI installs torch
    torch = None

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")
SPEC = "samples=1000,shape=3x4x4,dtype=float32,seed=5"


def _loader_workers(feeder):
    """The feeder's children that are its loader's workers (python processes; the producer's JVM is another child)."""
    workers = []
    for pid in _children(feeder):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"java" not in f.read().split(b"\0")[0]:
                    workers.append(pid)
        except OSError:
            pass
    return workers


@unittest.skipIf(torch is None, "needs torch")
class PausedFeederTest(unittest.TestCase):
    def setUp(self):
        launcher_or_skip(self)
        self.base = tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.addCleanup(self.base.cleanup)
        os.environ["TENSORSOCKET_BASE"] = self.base.name
        self.addCleanup(os.environ.pop, "TENSORSOCKET_BASE")

    def test_a_feeder_whose_consumers_all_left_ends_its_workers_and_loads_on_for_the_next(self):
        from tensorsocket_client import TensorConsumer
        log_path = os.path.join(self.base.name, "feeder.log")
        with open(log_path, "w") as log:
            feeder = subprocess.Popen(
                [sys.executable, os.path.join(SCRIPTS, "feed_case.py"), "paused", "mapstyle", "--workers", "2",
                 "--epochs", "1000", "--spec", SPEC, "--opt", "idle_timeout=120", "--log-info"],
                env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), stdout=log, stderr=log)
        try:
            with TensorConsumer("paused", batch_size=50, connect_timeout=60) as first:
                it = iter(first)
                for _ in range(10):  # half an epoch, then the trial is gone (Ctrl-C, or done)
                    next(it)
            deadline = time.monotonic() + 20
            while _loader_workers(feeder.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            with open(log_path) as f:
                said = f.read()
            self.assertEqual([], _loader_workers(feeder.pid), "the paused feeder keeps no loader worker:\n" + said)
            self.assertIn("has no consumer attached and waits for one: the feeder ended its loader's workers", said)
            self.assertIsNone(feeder.poll(), "the feeder lingers for the next trial")
            with TensorConsumer("paused", batch_size=40, connect_timeout=60) as second:
                for epoch in range(2):  # exact epochs from wherever it joined, loaded by new workers
                    ids = []
                    for batch in second:
                        ids.extend(int(i) for i in batch["id"])
                    self.assertEqual(list(range(1000)), sorted(ids), "epoch %d of the trial that came back" % epoch)
                self.assertTrue(_loader_workers(feeder.pid), "the feeder loads with workers again")
        finally:
            feeder.send_signal(signal.SIGINT)
            try:
                feeder.wait(timeout=60)
            except subprocess.TimeoutExpired:
                feeder.kill()
                feeder.wait()


if __name__ == "__main__":
    unittest.main()
