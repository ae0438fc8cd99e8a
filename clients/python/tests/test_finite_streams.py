"""A finite stream ends whole for every trainer, as users launch them: a PyTorch feeder of 2 epochs and three trainers
of different batch sizes started in the same second, again and again, on a loaded machine, each reading the epochs it
asked for: every epoch of every trainer is one pass over the data set, each sample's bytes its own. A trainer started
late (after the start grace) joins mid-epoch and still gets whole epochs, its last one completed by index after the
stream's end; iterating on past them says how many it got. A feeder without lane connections cannot complete it: the
late trainer is told how many samples its last epoch lacks, never cut short silently."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from bench_launcher import launcher_or_skip

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - the CI installs torch
    torch = None

SAMPLES = 600

FEEDER = r"""
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
from tensorsocket_client import TensorProducer


class Ids(Dataset):
    def __len__(self):
        return %d

    def __getitem__(self, index):
        time.sleep(float(sys.argv[1]))
        return torch.full((4,), float(index)), index


loader = DataLoader(Ids(), batch_size=20, shuffle=True)
p = TensorProducer("finite", loader, epochs=2, seed=5, lanes=int(sys.argv[2]))
p.run()
print("fed", p.batches_published, flush=True)
""" % SAMPLES

TRAINER = r"""
import json, sys
from tensorsocket_client import TensorConsumer, EpochIncomplete, ProducerGone
batch_size, epochs = int(sys.argv[1]), int(sys.argv[2])
with TensorConsumer("finite", batch_size=batch_size, connect_timeout=60) as c:
    print(json.dumps({"start": c.start_mode, "start_epoch": c.start_epoch, "start_sample": c.start_sample}),
          flush=True)
    for e in range(epochs):
        ids, right = [], True
        try:
            for batch in c:
                got = [int(i) for i in batch["label"]]
                ids.extend(got)
                right &= all(float(row[0]) == i and float(row[3]) == i for row, i in zip(batch["data"], got))
        except EpochIncomplete as x:
            print(json.dumps({"incomplete": str(x), "missing": x.missing, "ids": ids}), flush=True)
            sys.exit(3)
        except ProducerGone as x:
            print(json.dumps({"gone": str(x), "epoch": e}), flush=True)
            sys.exit(4)
        print(json.dumps({"epoch": e, "ids": ids, "right": bool(right)}), flush=True)
    try:
        for batch in c:
            pass
        print(json.dumps({"after": "another epoch"}), flush=True)
    except ProducerGone as x:
        print(json.dumps({"after": str(x)}), flush=True)
"""


def _burners(n):
    """``n`` processes that keep a core busy each: the machine under load, as on a shared host."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


@unittest.skipIf(torch is None, "needs torch")
class FiniteStreamTest(unittest.TestCase):
    def setUp(self):
        launcher_or_skip(self)
        self.base = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.env = dict(os.environ, TENSORSOCKET_BASE=self.base, PYTHONPATH=os.pathsep.join(sys.path))

    def tearDown(self):
        shutil.rmtree(self.base, ignore_errors=True)

    def _await_mid_epoch(self):
        """Until the producer's stream is a third into epoch 0: a trainer started then joins it mid-way."""
        from tensorsocket_client._status import query
        old = os.environ.get("TENSORSOCKET_BASE")
        os.environ["TENSORSOCKET_BASE"] = self.base
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                s = query("finite", 1.0)
                if s is not None and (s.epoch > 0 or s.sample >= SAMPLES // 3):
                    self.assertEqual(0, s.epoch, "the stream passed epoch 0 before the late trainer started")
                    return
                time.sleep(0.02)
            self.fail("the producer did not reach a third of epoch 0 within 60 s")
        finally:
            if old is None:
                os.environ.pop("TENSORSOCKET_BASE", None)
            else:
                os.environ["TENSORSOCKET_BASE"] = old

    def _round(self, trainers, step_s=0.002, lanes=2):
        """Starts the feeder and ``trainers`` ((batch size, epochs, late) each) at once, each late one once the stream
        is a third into epoch 0; their outputs."""
        feeder = subprocess.Popen([sys.executable, "-c", FEEDER, str(step_s), str(lanes)], env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs = []
        try:
            for batch_size, epochs, late in sorted(trainers, key=lambda t: t[2]):
                if late:
                    self._await_mid_epoch()
                procs.append(((batch_size, epochs, late), subprocess.Popen(
                    [sys.executable, "-c", TRAINER, str(batch_size), str(epochs)], env=self.env,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            results = []
            for what, p in procs:
                out, err = p.communicate(timeout=120)
                results.append((what, p.returncode, [json.loads(line) for line in out.splitlines()], err))
            fed_out, fed_err = feeder.communicate(timeout=120)
            self.assertEqual(0, feeder.returncode, fed_err)
            return results, fed_err
        finally:
            for _, p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if feeder.poll() is None:
                feeder.kill()
                feeder.wait()

    def _assert_whole(self, results, fed_err):
        for (batch_size, epochs, _), rc, lines, err in results:
            who = "trainer of batch size %d" % batch_size
            self.assertEqual(0, rc, "%s: %s\n%s\nproducer: %s" % (who, lines[-1:], err, fed_err[-3000:]))
            got = [line for line in lines if "epoch" in line and "ids" in line]
            self.assertEqual(epochs, len(got), who)
            for line in got:
                self.assertEqual(list(range(SAMPLES)), sorted(line["ids"]),
                                 "%s, epoch %d, is one pass (started %s)" % (who, line["epoch"], lines[0]))
                self.assertTrue(line["right"], "%s: every sample's data is its own" % who)
            self.assertIn("got %d epochs" % epochs, lines[-1]["after"], who)

    def test_trainers_started_in_the_same_second_under_load_get_every_epoch_whole(self):
        burners = _burners(2)
        try:
            for _ in range(4):
                results, fed_err = self._round([(16, 2, False), (20, 2, False), (64, 2, False)])
                self._assert_whole(results, fed_err)
                for _, _, lines, _ in results:
                    self.assertEqual("epoch_start", lines[0]["start"], "within the start grace: %s" % lines[0])
        finally:
            for b in burners:
                b.kill()
                b.wait()

    def test_a_trainer_started_after_the_grace_joins_mid_epoch_and_its_last_epoch_is_completed(self):
        results, fed_err = self._round([(16, 2, False), (50, 2, False), (30, 2, True)], step_s=0.005)
        self._assert_whole(results, fed_err)
        late = results[-1][2][0]
        self.assertEqual(("exact", 0), (late["start"], late["start_epoch"]), late)
        self.assertGreater(late["start_sample"], 0, late)
        self.assertIn("loads the first", fed_err)

    def test_without_lane_connections_the_late_trainer_is_told_what_its_last_epoch_lacks(self):
        results, fed_err = self._round([(16, 2, False), (30, 2, True)], step_s=0.005, lanes=0)
        (_, _, _), rc, lines, err = results[-1]
        self.assertEqual(3, rc, "the late trainer's second epoch ends with EpochIncomplete: %s\n%s" % (lines, err))
        start = lines[0]["start_sample"]
        self.assertGreater(start, 0, lines[0])
        self.assertEqual(start, lines[-1]["missing"], lines[-1])
        self.assertEqual(SAMPLES - start, len(lines[-1]["ids"]), "every sample that came was handed out")
        self.assertIn("ended %d samples short" % start, lines[-1]["incomplete"])
        self.assertIn("opens no lane connections", fed_err)


if __name__ == "__main__":
    unittest.main()
