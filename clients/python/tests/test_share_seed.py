"""Reproducible shared runs: two runs of a shared sweep with the same seed give every trial the same samples in the
same order (as private loaders with a fixed seed do), another seed another order, and the share's log and the
producer's status say the seed."""

import itertools
import os
import re
import sys
import tempfile
import time
import unittest
from unittest import mock

try:
    import torch  # noqa: F401
except ImportError:  # numpy-only installs
    torch = None

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


@unittest.skipIf(torch is None, "needs torch")
class SharedSeedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            raise unittest.SkipTest("no tensorsocket launcher (build the command line first)")
        sys.path.insert(0, SCRIPTS)

    def run_sweep(self, name, **seeding):
        """One shared run: two trials of batch sizes 32 and 50 reading two epochs; their ids in order, the share's log."""
        from tensorsocket_client import share
        from tensorsocket_client.share import log_path, stop_if_idle
        # Both start at the epoch's start (the producer waits for the two): a trial that joins later starts where the
        # producer is, and its epochs straddle the producer's from there, which no seed repeats.
        options = dict(seeding.pop("producer_options", {}), min_consumers=2)
        loaders = [share(name, "share_loaders:synthetic", batch_size=b, kwargs={"samples": 300}, linger=30.0,
                         producer_options=options, **seeding) for b in (32, 50)]
        self.assertEqual(["epoch_start"] * 2, [ld.dataset.consumer.start_mode for ld in loaders])
        orders = [[], []]
        for _ in range(2):  # the trials read side by side, as trials do
            epoch = [[], []]
            for batches in itertools.zip_longest(*loaders):
                for t, batch in enumerate(batches):
                    if batch is not None:
                        epoch[t] += batch[2].tolist()
            for t in range(2):
                self.assertEqual(list(range(300)), sorted(epoch[t]), "an exact epoch")
                orders[t].append(epoch[t])
        with open(log_path(name)) as f:
            log = f.read()
        feeder = re.search(r"the feeder of producer '%s' \(pid (\d+), " % name, log)
        if feeder is not None:  # what ps aux shows of it
            with open("/proc/%s/cmdline" % feeder.group(1), "rb") as f:
                log += "\nfeeder cmdline: %s\n" % f.read().split(b"\0")[0].decode()
        from tensorsocket_client._status import query
        log += "\nstatus seed: %s\n" % query(name).seed  # what `tensorsocket status` shows
        for loader in loaders:
            loader.dataset.close()
        deadline = time.monotonic() + 30
        while not stop_if_idle(name) and time.monotonic() < deadline:
            time.sleep(0.05)
        return orders, log

    def test_the_same_seed_repeats_every_trials_samples_and_order(self):
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, \
                mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            first, log = self.run_sweep("seeded", seed=7)
            again, _ = self.run_sweep("seeded", producer_options={"seed": 7})
            other, _ = self.run_sweep("seeded", seed=8)
        self.assertEqual(first, again, "the same seed: the same samples in the same order for every trial")
        self.assertNotEqual(first[0][0], first[0][1], "epochs are shuffled anew")
        self.assertNotEqual(first, other, "another seed: other orders")
        self.assertIn("shuffled with seed 7", log)
        self.assertIn("status seed: 7", log, "the producer's status names its seed")
        self.assertIn(", tensorsocket-share-feeder seeded) declared 300 samples per epoch", log,
                      "the feeder is named for what it is, not for the trial it was forked from")
        self.assertIn("feeder cmdline: tensorsocket-share-feeder seeded\n", log, "and so ps aux shows it")


if __name__ == "__main__":
    unittest.main()
