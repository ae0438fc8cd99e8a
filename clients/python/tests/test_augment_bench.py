"""augment_bench.py, three trials that augment differently, private against sharing one decoding, run short: it prints
every trial's samples/s in both runs and the ratios. What the figures are is the benchmark's business."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from bench_launcher import launcher_or_skip

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "augment_bench.py"

try:
    import torchvision
except ImportError:
    torchvision = None


@unittest.skipIf(torchvision is None, "needs torchvision")
class AugmentBenchTest(unittest.TestCase):
    def test_it_prints_every_trial_private_and_shared_and_the_ratios(self):
        launcher = launcher_or_skip(self)
        with tempfile.TemporaryDirectory() as home:
            env = dict(os.environ, HOME=home, TENSORSOCKET_LAUNCHER=launcher)
            out = subprocess.run([sys.executable, str(EXAMPLE), "--seconds", "1", "--count", "40", "--workers", "1"],
                                 capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(0, out.returncode, out.stderr)
        lines = out.stdout.splitlines()
        for mode in ("private", "shared"):
            rows = [line.split() for line in lines if line.startswith(mode + " ")]
            self.assertEqual(["1", "2", "3", "all"], [r[1] for r in rows], out.stdout)
            self.assertTrue(all(float(r[-1]) > 0 for r in rows), out.stdout)
        summary = json.loads(lines[-1])
        self.assertAlmostEqual(summary["shared"] / summary["private"], summary["ratio"], delta=0.01)
        self.assertGreater(summary["cpu_ratio"], 0)


if __name__ == "__main__":
    unittest.main()
