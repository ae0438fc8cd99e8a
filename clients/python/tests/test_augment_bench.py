"""augment_bench.py, a sweep of four trials (two models, two augmentation strengths), private against sharing one
decoding with each trial augmenting itself, run short: it prints every trial's samples/s in both runs, each sweep's
wall and CPU time and the ratios. What the figures are is the benchmark's business."""
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
            out = subprocess.run([sys.executable, str(EXAMPLE), "--epochs", "1", "--count", "40", "--workers", "1",
                                  "--step-ms", "1", "--cache-mb", "64"],
                                 capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(0, out.returncode, out.stderr)
        lines = out.stdout.splitlines()
        for mode in ("private", "shared"):
            rows = [line.split() for line in lines if line.startswith(mode + " ") and "sweep:" not in line]
            self.assertEqual(["1", "2", "3", "4"], [r[1] for r in rows], out.stdout)
            self.assertEqual({"cnn", "resnet"}, {r[2] for r in rows}, out.stdout)
            self.assertTrue(all(float(r[-1]) > 0 for r in rows), out.stdout)
            self.assertEqual(1, sum(1 for line in lines if line.startswith(mode + " ") and "sweep:" in line),
                             out.stdout)
        summary = json.loads(lines[-1])
        self.assertAlmostEqual(summary["shared_wall"][0] / summary["private_wall"][0], summary["wall_ratio"][0],
                               delta=0.01)
        self.assertAlmostEqual(summary["shared_cpu"][0] / summary["private_cpu"][0], summary["cpu_ratio"][0],
                               delta=0.01)
        self.assertTrue(all(v > 0 for v in summary["private_cpu"] + summary["shared_cpu"]), summary)


if __name__ == "__main__":
    unittest.main()
