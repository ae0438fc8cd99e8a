"""A container's /dev/shm, as Docker gives it by default (64 MiB), with a PyTorch feeder whose DataLoader workers hand
their 12 MiB batches over in /dev/shm too: the producer says before it starts that its arena and the workers' batches
do not both fit, and the trial is told it ran out of shared memory and what to do, never just that a worker exited;
in a 256 MiB /dev/shm the arena leaves the workers their share and the trial reads its epochs. Each case runs in a
mount namespace of its own with a tmpfs of that size over /dev/shm (root and unshare(1) needed; skipped otherwise)."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

from bench_launcher import launcher_or_skip

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - the CI installs torch
    torch = None

FEEDER = """
import torch
from torch.utils.data import DataLoader, Dataset
from tensorsocket_client import TensorProducer
class Big(Dataset):
    def __len__(self):
        return 640
    def __getitem__(self, i):
        return torch.full((3, 256, 256), i % 256, dtype=torch.uint8), i
TensorProducer("docker", DataLoader(Big(), batch_size=64, num_workers=2), epochs=2, start_grace=0).run()
"""

TRAINER = """
from tensorsocket_client import TensorConsumer
with TensorConsumer("docker", batch_size=64, connect_timeout=60) as c:
    n = 0
    for e in range(2):
        for b in c:
            n += b.size
print("read", n)
"""


@unittest.skipIf(torch is None, "needs torch")
@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare(1) for a /dev/shm of its own")
class SmallSharedMemoryTest(unittest.TestCase):
    def _in_a_container(self, size):
        launcher_or_skip(self)
        d = tempfile.mkdtemp()
        for name, text in (("feeder.py", FEEDER), ("trainer.py", TRAINER)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        script = textwrap.dedent("""
            mount -t tmpfs -o size=%s tmpfs /dev/shm
            export TENSORSOCKET_BASE=/dev/shm/ts
            "$0" %s/feeder.py > %s/feeder.out 2>&1 &
            "$0" %s/trainer.py > %s/trainer.out 2>&1
            echo "trainer exit $?" >> %s/trainer.out
            wait
        """ % (size, d, d, d, d, d))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script, sys.executable],
                       env=env, timeout=180, check=True)
        with open(os.path.join(d, "feeder.out"), errors="replace") as f:
            feeder = f.read()
        with open(os.path.join(d, "trainer.out"), errors="replace") as f:
            trainer = f.read()
        shutil.rmtree(d, ignore_errors=True)
        return feeder, trainer

    def test_docker_default_shm_is_told_before_the_start_and_to_the_trial(self):
        feeder, trainer = self._in_a_container("64m")
        # the loader's workers start on epoch 0 while the producer makes its arena: by then their first batches may
        # have taken some of the 63 MiB, or enough that the arena itself no longer fits; either way it is said
        self.assertRegex(feeder, r"do not both fit in the \d+ MiB free|cannot serve: not enough shared memory in "
                                 r"/dev/shm/ts/docker: the arena needs")
        self.assertIn("trainer exit 1", trainer)
        self.assertIn("shared memory", trainer.splitlines()[-2], trainer)
        self.assertIn("--shm-size", trainer.splitlines()[-2], trainer)

    def test_a_larger_shm_leaves_the_workers_their_share(self):
        feeder, trainer = self._in_a_container("256m")
        self.assertNotIn("do not both fit", feeder)
        self.assertIn("read 1280", trainer, feeder[-3000:])
        self.assertIn("trainer exit 0", trainer)


if __name__ == "__main__":
    unittest.main()
