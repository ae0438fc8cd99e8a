"""Lanes of a producer that a PyTorch DataLoader feeds: a slow trial is moved to a lane whose batches the feeder loads
on a lane connection of its own (its own DataLoader and worker process), while a fast trial reads on; every epoch of
both is one pass over the data set, each sample's bytes its own; the feeder ends once its lanes are done. A loader
that raises while loading a lane fails that trial alone, with the loader's exception."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from bench_launcher import launcher_or_skip

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - the CI installs torch
    torch = None

FEEDER = r"""
import os, threading, torch
from torch.utils.data import DataLoader, Dataset
from tensorsocket_client import TensorProducer

FAIL_IN_LANE = os.environ.get("FAIL_IN_LANE") == "1"


class Ids(Dataset):
    def __len__(self):
        return 600

    def __getitem__(self, index):
        # a lane's loader forks its worker from the lane connection's thread, whose name the worker keeps
        if FAIL_IN_LANE and threading.current_thread().name.startswith("tensorsocket-lane-feeder") and index % 7 == 3:
            raise ValueError("sample %d is broken" % index)
        return torch.full((4,), float(index)), index


loader = DataLoader(Ids(), batch_size=10, shuffle=True, num_workers=1)
p = TensorProducer("fedlane", loader, epochs=3, min_consumers=2, start_grace=0, slots=16, seed=3, stall_timeout=30,
                   lane_idle_cores=0)
p.run()
print("fed", p.batches_published, flush=True)
"""


FAST_TRIAL = r"""
import json
from tensorsocket_client import TensorConsumer
from test_feeder_lanes import _epochs
with TensorConsumer("fedlane", batch_size=10, connect_timeout=60) as c:
    for ids, right in _epochs(c, 0, set(), None):
        print(json.dumps({"ids": ids, "right": bool(right)}), flush=True)
"""


def descendants(pid):
    """The pids of every process below ``pid`` now (Linux: /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def still_running(pids, within_s):
    """Those of ``pids`` still running (not ended, not a zombie) after waiting up to ``within_s`` for them."""
    deadline = time.monotonic() + within_s
    while True:
        left = []
        for pid in pids:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        left.append(pid)
            except OSError:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _epochs(consumer, step_s, lanes, status_of):
    """Every epoch's (ids, whether each sample's data is its id) as ``consumer`` reads them, ``step_s`` a batch."""
    epochs = []
    for _ in range(3):
        ids, right = [], True
        for batch in consumer:
            got = [int(i) for i in batch["label"]]
            ids.extend(got)
            right &= all(float(row[0]) == i and float(row[3]) == i for row, i in zip(batch["data"], got))
            if step_s:
                time.sleep(step_s)
                if status_of is not None:
                    lanes.add(status_of())
        epochs.append((ids, right))
    return epochs


@unittest.skipIf(torch is None, "needs torch")
class FeederLaneTest(unittest.TestCase):
    def _run(self, fail_in_lane):
        launcher_or_skip(self)
        from tensorsocket_client import TensorConsumer
        from tensorsocket_client._status import query
        base = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        env = dict(os.environ, TENSORSOCKET_BASE=base, FAIL_IN_LANE="1" if fail_in_lane else "0",
                   PYTHONPATH=os.pathsep.join(sys.path))
        old = os.environ.get("TENSORSOCKET_BASE")
        os.environ["TENSORSOCKET_BASE"] = base
        feeder = subprocess.Popen([sys.executable, "-c", FEEDER], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            results = {}
            # the fast trial in a process of its own: beside the slow one's thread, the GIL would slow it down
            fast = subprocess.Popen([sys.executable, "-c", FAST_TRIAL], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            lanes = set()
            slow_error = None
            try:
                with TensorConsumer("fedlane", batch_size=10, connect_timeout=60) as c:
                    def lane():
                        s = query("fedlane")
                        return max((x.lane for x in s.consumers if x.pid == os.getpid()), default=0) if s else 0
                    results["slow"] = _epochs(c, 0.02, lanes, lane)
            except Exception as e:  # the lane's failure, where the test asks for one
                slow_error = e
            fast_out, fast_err = fast.communicate(timeout=120)
            self.assertEqual(0, fast.returncode, fast_err)
            results["fast"] = [(e["ids"], e["right"]) for e in map(json.loads, fast_out.splitlines())]
            out, err = feeder.communicate(timeout=120)
            return results, lanes, slow_error, feeder.returncode, out, err
        finally:
            if feeder.poll() is None:
                feeder.kill()
                feeder.wait()
            if old is None:
                os.environ.pop("TENSORSOCKET_BASE", None)
            else:
                os.environ["TENSORSOCKET_BASE"] = old
            shutil.rmtree(base, ignore_errors=True)

    def test_a_slow_trial_reads_from_a_lane_the_feeder_loads_and_every_epoch_is_exact(self):
        results, lanes, slow_error, rc, out, err = self._run(False)
        self.assertIsNone(slow_error, err)
        self.assertEqual(0, rc, err)
        self.assertIn("fed 180", out)
        for who in ("fast", "slow"):
            self.assertEqual(3, len(results[who]), who)
            for e, (ids, right) in enumerate(results[who]):
                self.assertEqual(list(range(600)), sorted(ids), "%s's epoch %d is one pass" % (who, e))
                self.assertTrue(right, "%s's epoch %d: every sample's data is its own" % (who, e))
        self.assertTrue(any(lane > 0 for lane in lanes), "the slow trial read from a lane: %s\n%s" % (lanes, err))
        self.assertIn("to lane 1", err)

    def test_a_loader_failing_in_a_lane_fails_that_trial_alone_with_the_exception(self):
        results, lanes, slow_error, rc, out, err = self._run(True)
        self.assertIsNotNone(slow_error, "the trial in the lane was told its loader failed")
        message = str(slow_error)
        self.assertIn("ValueError: sample", message)
        self.assertIn("is broken", message)
        self.assertIn("lane 1", message)
        for e, (ids, right) in enumerate(results["fast"]):
            self.assertEqual(list(range(600)), sorted(ids), "the fast trial's epoch %d is one pass" % e)
            self.assertTrue(right, "the fast trial's epoch %d: every sample's data is its own" % e)
        self.assertEqual(0, rc, err)  # the feeder's main stream was whole: it ends as declared
        self.assertIn("fed 180", out)

    def test_a_feeder_killed_while_a_trial_is_in_its_lane_fails_both_trials_saying_so(self):
        launcher_or_skip(self)
        import signal

        from tensorsocket_client import TensorConsumer
        from tensorsocket_client._status import query
        base = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        env = dict(os.environ, TENSORSOCKET_BASE=base, PYTHONPATH=os.pathsep.join(sys.path))
        old = os.environ.get("TENSORSOCKET_BASE")
        os.environ["TENSORSOCKET_BASE"] = base
        feeder = subprocess.Popen([sys.executable, "-c", FEEDER.replace("epochs=3", "epochs=50")], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        errors = {}
        reading = {"fast": threading.Event(), "slow": threading.Event()}

        def read(who, step_s):
            try:
                with TensorConsumer("fedlane", batch_size=10, connect_timeout=60) as c:
                    for _ in range(50):
                        for _batch in c:
                            reading[who].set()
                            time.sleep(step_s)
            except Exception as e:
                errors[who] = e
        threads = [threading.Thread(target=read, args=("fast", 0.001)), threading.Thread(target=read, args=("slow", 0.02))]
        try:
            for t in threads:
                t.start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                s = query("fedlane")
                if s is not None and any(x.lane > 0 for x in s.consumers) and all(e.is_set() for e in reading.values()):
                    break
                time.sleep(0.05)
            else:
                self.fail("no trial moved to a lane while both read")
            family = descendants(feeder.pid)  # its producer and its loaders' workers, the lane's among them
            os.kill(feeder.pid, signal.SIGKILL)
            for t in threads:
                t.join(60)
                self.assertFalse(t.is_alive(), "a trial still waits after its feeder was killed")
            left = still_running(family, 30)
            self.assertEqual([], left, "every process the killed feeder started ends with it")
            for who in ("fast", "slow"):
                self.assertIn(who, errors, "the %s trial was told" % who)
                self.assertIn("pid %d" % feeder.pid, str(errors[who]), who)
                self.assertIn("did its process die?", str(errors[who]), who)
        finally:
            feeder.kill()
            feeder.communicate(timeout=30)
            if old is None:
                os.environ.pop("TENSORSOCKET_BASE", None)
            else:
                os.environ["TENSORSOCKET_BASE"] = old
            shutil.rmtree(base, ignore_errors=True)


class LaneConnectionRefusalTest(unittest.TestCase):
    """What the producer says to lane connections it cannot take, and to a declaration of lanes it cannot serve."""

    def _serve(self, launcher, base, name):
        from pathlib import Path
        env = dict(os.environ, TENSORSOCKET_BASE=base)
        producer = subprocess.Popen([launcher, "serve", "--name", name, "--external"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        sock = Path(base) / name / "feeder.sock"
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline and producer.poll() is None:
            time.sleep(0.02)
        time.sleep(0.2)  # bound before it listens: a connection made in between is refused
        return producer, sock

    def test_a_stranger_and_one_connection_too_many_are_refused_saying_why(self):
        launcher = launcher_or_skip(self)
        from tensorsocket_client import wire
        from tensorsocket_client._feeder_link import FeederError, FeederLink
        tensors = (wire.TensorSpec("data", 7, (4,)),)
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as base:
            producer, sock = self._serve(launcher, base, "lanes-declared")
            links = []
            try:
                # lanes without a data set loaded by index: the declaration is refused
                bad = FeederLink(sock, 30)
                links.append(bad)
                bad.send(wire.FeederHello(os.getpid(), "test", 10, 100, 1, "", tensors, 0, False, 0, 2))
                with self.assertRaises(FeederError) as refused:
                    bad.read(wire.FeederWelcome, "FEEDER_HELLO")
                self.assertIn("2 lane connections from a feeder that keeps its own order", str(refused.exception))
            finally:
                producer.kill()
                producer.communicate(timeout=30)
            producer, sock = self._serve(launcher, base, "refuse")
            try:
                feeder = FeederLink(sock, 30)
                links.append(feeder)
                feeder.send(wire.FeederHello(os.getpid(), "test", 10, 100, 1, "", tensors, 100, True, 1, 1))
                control = sock.parent / "control.sock"
                deadline = time.monotonic() + 60
                while not control.exists() and time.monotonic() < deadline:
                    time.sleep(0.02)  # the declaration is taken: the producer made its arena
                self.assertTrue(control.exists())

                def refusal(link, expected):
                    links.append(link)
                    with self.assertRaises(FeederError) as refused:
                        link.read(expected, "its first frame")
                    return str(refused.exception)
                stranger = FeederLink(sock, 30)
                stranger.send(wire.FeederLaneHello(os.getpid() + 1))
                said = refusal(stranger, wire.LaneStart)
                self.assertIn("a lane connection of pid %d" % (os.getpid() + 1), said)
                self.assertIn("only its feeder opens lane connections", said)
                # two lane connections where one was declared: whichever the producer reads second is refused
                pair = [FeederLink(sock, 30), FeederLink(sock, 30)]
                links.extend(pair)
                for link in pair:
                    link.send(wire.FeederLaneHello(os.getpid()))
                said = None
                deadline = time.monotonic() + 30
                while said is None and time.monotonic() < deadline:
                    for link in pair:
                        link.sock.settimeout(0.1)
                        try:
                            link.read(wire.LaneStart, "FEEDER_LANE")
                        except FeederError as e:
                            said = str(e)
                        except OSError:
                            pass  # nothing yet: the one admitted hears nothing until a lane comes
                self.assertIsNotNone(said, "one of the two was refused")
                self.assertIn("opened more lane connections than the 1 it declared", said)
                second = FeederLink(sock, 30)
                second.send(wire.FeederHello(os.getpid() + 2, "other", 10, 100, 1, "", tensors))
                said = refusal(second, wire.FeederWelcome)
                self.assertIn("already has a feeder (pid %d, test)" % os.getpid(), said)
            finally:
                for link in links:
                    link.close()
                producer.kill()
                producer.communicate(timeout=30)

if __name__ == "__main__":
    unittest.main()
