"""The feeder's DataLoader workers end with the feeder: one forked just before the feeder is killed, still in its
``worker_init_fn`` when its parent dies, ends too (PyTorch's own check of the parent starts after that function,
and sees the orphan it already is as its parent), and so releases what it inherited: the feeder's connections and
output pipes."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from bench_launcher import launcher_or_skip
from test_feeder_lanes import still_running

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - the CI installs torch
    torch = None

FEEDER_STAND_IN = r"""
import os, sys, time
from torch.utils.data import DataLoader, Dataset
from tensorsocket_client._map_style import MapStyle

WHERE, WHICH, CONTEXT = sys.argv[1], sys.argv[2], sys.argv[3]


class Ids(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, index):
        return index


def slow_start(worker_id):
    with open(os.path.join(WHERE, "worker"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3)


if __name__ == "__main__":
    if WHICH == "own order":  # a loader fed as it is, in its own order
        from tensorsocket_client._loader_workers import ended_with_this_process
        for batch in ended_with_this_process(DataLoader(Ids(), batch_size=10, num_workers=1, worker_init_fn=slow_start,
                                                        multiprocessing_context=CONTEXT)):
            print(batch.tolist(), flush=True)
        sys.exit(0)
    ix = MapStyle(DataLoader(Ids(), batch_size=10, num_workers=1, worker_init_fn=slow_start,
                             multiprocessing_context=CONTEXT), seed=1)
    loader = ix.lane_loader()(range(100)) if WHICH == "lane" else ix.loader(range(100))
    for batch in loader:
        print(batch.tolist(), flush=True)
"""


def _run_file(script):
    """``script`` run from a file of its own (spawned and forkserver workers import their functions from it)."""
    with tempfile.TemporaryDirectory() as where:
        path = os.path.join(where, "feeder.py")
        with open(path, "w") as f:
            f.write(script)
        return subprocess.run([sys.executable, path], env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                              capture_output=True, text=True, timeout=120)


@unittest.skipIf(torch is None, "needs torch")
class WorkersEndWithTheFeederTest(unittest.TestCase):
    def test_a_worker_whose_feeder_is_killed_while_it_starts_ends_too(self):
        for which, context in (("main", "fork"), ("lane", "fork"), ("lane", "spawn"), ("own order", "fork")):
            with self.subTest(which=which, context=context), tempfile.TemporaryDirectory() as where:
                script = os.path.join(where, "feeder.py")  # a file: spawned workers import the data set from it
                with open(script, "w") as f:
                    f.write(FEEDER_STAND_IN)
                feeder = subprocess.Popen([sys.executable, script, where, which, context],
                                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                worker = None
                try:
                    marker = os.path.join(where, "worker")
                    deadline = time.monotonic() + 60
                    while not (os.path.exists(marker) and os.path.getsize(marker)) and time.monotonic() < deadline:
                        self.assertIsNone(feeder.poll(), feeder.stderr.read() if feeder.poll() is not None else "")
                        time.sleep(0.02)
                    with open(marker) as f:
                        worker = int(f.read())
                    os.kill(feeder.pid, signal.SIGKILL)
                    feeder.wait(30)
                    self.assertEqual([], still_running([worker], 10), "the %s loader's worker ended" % which)
                    # and so its copy of the feeder's output pipes closed: their reader is not kept waiting
                    out, _ = feeder.communicate(timeout=10)
                    self.assertEqual(b"", out)
                finally:
                    if feeder.poll() is None:
                        feeder.kill()
                        feeder.wait()
                    if worker is not None and still_running([worker], 0):
                        os.kill(worker, signal.SIGKILL)  # this test failed: it leaves no process behind either

    def test_a_loader_in_its_own_order_is_wrapped_once_and_a_forkservers_not_at_all(self):
        from torch.utils.data import DataLoader

        from tensorsocket_client._loader_workers import ExitWithFeeder, ended_with_this_process
        loader = DataLoader(list(range(4)), batch_size=2, num_workers=1)
        self.assertIs(loader, ended_with_this_process(ended_with_this_process(loader)))
        self.assertIsInstance(loader.worker_init_fn, ExitWithFeeder)
        self.assertIsNone(loader.worker_init_fn.then)
        for kept in (DataLoader(list(range(4)), batch_size=2), DataLoader(list(range(4)), batch_size=2, num_workers=1,
                                                                         multiprocessing_context="forkserver")):
            self.assertIsNone(ended_with_this_process(kept).worker_init_fn)
        self.assertEqual([1, 2], ended_with_this_process([1, 2]))

    def test_the_loaders_own_worker_init_fn_still_runs_in_each_worker(self):
        script = r"""
import os
from torch.utils.data import DataLoader
from tensorsocket_client._map_style import MapStyle

def mark(worker_id):
    os.environ["MARK"] = "worker %d" % worker_id

def marked(samples):
    return [os.environ.get("MARK")] * len(samples)

ix = MapStyle(DataLoader(list(range(8)), batch_size=4, num_workers=2, worker_init_fn=mark, collate_fn=marked), seed=1)
print(sorted({m for batch in ix.loader(range(8)) for m in batch}))
print(sorted({m for batch in ix.lane_loader()(range(8)) for m in batch}))
"""
        out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertEqual(["['worker 0', 'worker 1']"] * 2, out.stdout.splitlines())

    def test_a_forkservers_workers_are_left_to_it(self):
        script = r"""
from torch.utils.data import DataLoader
from tensorsocket_client._map_style import MapStyle

if __name__ == "__main__":
    ix = MapStyle(DataLoader(list(range(8)), batch_size=4, num_workers=1, multiprocessing_context="forkserver"),
                  seed=1)
    print([b.tolist() for b in ix.lane_loader()(range(8))])
"""
        out = _run_file(script)
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertEqual("[[0, 1, 2, 3], [4, 5, 6, 7]]", out.stdout.strip())

    def test_persistent_workers_end_when_the_feed_ends(self):
        launcher_or_skip(self)
        script = r"""
import os, sys, tempfile, threading
import torch.utils.data as tud
from tensorsocket_client import TensorConsumer, TensorProducer


def workers():
    mine = open("/proc/self/cmdline", "rb").read()
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and int(pid) != os.getpid() and open("/proc/%s/cmdline" % pid, "rb").read() == mine:
                if open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1] == str(os.getpid()):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def feed_and_read():
    loader = tud.DataLoader(list(range(40)), batch_size=8, shuffle=True, num_workers=2, persistent_workers=True)
    feeder = TensorProducer("kept", loader, epochs=3, seed=1, start_grace=0, slots=4)
    fed = threading.Thread(target=feeder.run)
    fed.start()
    with TensorConsumer("kept", batch_size=8, connect_timeout=60) as c:
        for _batch in c:
            print("while fed", len(workers()), flush=True)  # 4 slots of 15 batches: the feeder waits, its workers stay
            break
        while not c.is_end_of_stream():  # the rest of epoch 0 is skipped, then epochs 1 and 2
            for _batch in c:
                pass
    fed.join(60)
    print("after", workers(), flush=True)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as base:
        os.environ["TENSORSOCKET_BASE"] = base
        feed_and_read()
"""
        out = _run_file(script)
        self.assertEqual(0, out.returncode, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(["while fed 2", "after []"], lines, out.stderr)

    def test_a_worker_whose_parent_is_not_the_feeder_exits_at_once(self):
        out = subprocess.run([sys.executable, "-c", "import os\nfrom tensorsocket_client._loader_workers import "
                              "ExitWithFeeder\nExitWithFeeder(os.getppid() + 1)(0)\nprint('still here')"],
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(("", 0), (out.stdout, out.returncode), out.stderr)


if __name__ == "__main__":
    unittest.main()
