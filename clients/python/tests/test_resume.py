"""A trial restarted from its checkpoint continues its epoch exactly, as spot preemption, the OOM killer and sweep
engines' pause/resume make users do: a trial of a shared loader saves ``state_dict()`` mid-epoch beside its model,
is SIGKILLed, and a new process given ``load_state_dict()`` reads every sample of that epoch not read before the
checkpoint, once, then whole epochs: whether the producer ran on, or its linger ran out and a new one started (same
data set and seed), and for both ranks of a data-parallel job. A state of another seed is refused naming it."""
import json
import os
import shutil
import signal
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

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
SAMPLES = 500

TRIAL = r"""
import json, os, sys, time
from tensorsocket_client import share
name, batch_size, state_file, mode, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
job = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
loader = share(name, "share_loaders:synthetic", batch_size=batch_size, kwargs={"samples": %d, "sample_ms": 0.5},
               linger=float(os.environ.get("LINGER", "30")), seed=seed, **job)
def ids(batch):
    return [int(i) for i in batch[2]]
if mode == "first":
    for epoch in range(1):
        for batch in loader:
            pass
    seen = []
    for batch in loader:
        seen += ids(batch)
        if len(seen) >= 7 * batch_size:
            break
    with open(state_file + ".tmp", "w") as f:
        json.dump({"state": loader.state_dict(), "before": seen}, f)
    os.rename(state_file + ".tmp", state_file)
    print("saved", flush=True)
    time.sleep(600)  # the test kills it here, as a preemption would
else:
    saved = json.load(open(state_file))
    loader.load_state_dict(saved["state"])
    rest = []
    for batch in loader:
        rest += ids(batch)
    after = []
    for batch in loader:
        after += ids(batch)
    print(json.dumps({"before": saved["before"], "rest": rest, "after": after}), flush=True)
""" % SAMPLES


@unittest.skipIf(torch is None, "needs torch")
class ResumeTest(unittest.TestCase):
    def setUp(self):
        launcher_or_skip(self)
        self.base = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.env = dict(os.environ, TENSORSOCKET_BASE=self.base,
                        PYTHONPATH=os.pathsep.join([SCRIPTS] + sys.path), LINGER="3")

    def tearDown(self):
        shutil.rmtree(self.base, ignore_errors=True)  # the producers end with their linger (3 s)

    def _start(self, name, batch_size, state_file, mode, seed=11, job=None, env=None):
        args = [sys.executable, "-c", TRIAL, name, str(batch_size), state_file, mode, str(seed)]
        if job is not None:
            args.append(json.dumps(job))
        return subprocess.Popen(args, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def _checkpoint_and_kill(self, procs):
        """Waits until every one of ``procs`` saved its state, then SIGKILLs them all."""
        for p in procs:
            line = p.stdout.readline()
            self.assertEqual("saved", line.strip(), p.stderr.read() if not line else line)
        for p in procs:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            p.stdout.close()
            p.stderr.close()

    def _resumed(self, p):
        out, err = p.communicate(timeout=120)
        self.assertEqual(0, p.returncode, err)
        return json.loads(out.splitlines()[-1])

    def _assert_once(self, before, rest, what):
        self.assertTrue(before, what)
        self.assertEqual(list(range(SAMPLES)), sorted(before + rest),
                         "%s: the samples before the checkpoint and after resuming are the data set once" % what)

    def test_a_trial_killed_after_its_checkpoint_continues_its_epoch_while_the_producer_runs_on(self):
        state = os.path.join(self.base, "state.json")
        other = self._start("resume", 16, os.path.join(self.base, "other.json"), "first")  # keeps the producer busy
        first = self._start("resume", 20, state, "first")
        self._checkpoint_and_kill([first])
        r = self._resumed(self._start("resume", 20, state, "resume"))
        self._assert_once(r["before"], r["rest"], "a trial resumed beside a running producer")
        self.assertEqual(list(range(SAMPLES)), sorted(r["after"]), "the next epoch is whole")
        self._checkpoint_and_kill([other])

    def test_a_trial_resumes_its_epoch_from_a_new_producer_after_the_old_ones_linger_ran_out(self):
        state = os.path.join(self.base, "state.json")
        env = dict(self.env, LINGER="1")
        first = self._start("restart", 25, state, "first", env=env)
        self._checkpoint_and_kill([first])
        directory = os.path.join(self.base, "restart")
        deadline = time.monotonic() + 30
        while os.path.exists(directory) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(os.path.exists(directory), "the producer ended with its linger")
        r = self._resumed(self._start("restart", 25, state, "resume", env=env))
        self._assert_once(r["before"], r["rest"], "a trial resumed from a restarted producer")
        self.assertEqual(list(range(SAMPLES)), sorted(r["after"]), "the next epoch is whole")

    def test_both_ranks_of_a_job_resume_their_shares_of_the_epoch(self):
        states = [os.path.join(self.base, "rank%d.json" % r) for r in range(2)]
        firsts = [self._start("ranks", 10, states[r], "first", job={"job": "ddp", "rank": r, "world_size": 2})
                  for r in range(2)]
        self._checkpoint_and_kill(firsts)
        resumed = [self._start("ranks", 10, states[r], "resume", job={"job": "ddp", "rank": r, "world_size": 2})
                   for r in range(2)]
        results = [self._resumed(p) for p in resumed]
        self._assert_once(results[0]["before"] + results[1]["before"], results[0]["rest"] + results[1]["rest"],
                          "the ranks' shares")
        self.assertEqual(list(range(SAMPLES)), sorted(results[0]["after"] + results[1]["after"]))

    def test_a_state_of_another_seed_is_refused_naming_it(self):
        state = os.path.join(self.base, "state.json")
        first = self._start("seeded", 20, state, "first", seed=11)
        self._checkpoint_and_kill([first])
        with open(state) as f:
            saved = json.load(f)
        saved["state"]["consumer"]["order_key"] += 1
        with open(state, "w") as f:
            json.dump(saved, f)
        p = self._start("seeded", 20, state, "resume", seed=11)
        out, err = p.communicate(timeout=120)
        self.assertNotEqual(0, p.returncode)
        self.assertIn("orders of another seed", err)


if __name__ == "__main__":
    unittest.main()
