"""pace_bench.py, the benchmark of trials of different speeds on one producer, run short (its producers given more
options, as --serve-options passes them): it prints each trial's samples/s alone and shared, and their ratio. What the
figures are is the benchmark's business."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from bench_launcher import launcher_or_skip

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pace_bench.py"


class PaceBenchTest(unittest.TestCase):
    def test_it_prints_each_trial_alone_and_shared(self):
        launcher = launcher_or_skip(self)
        out = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "1,4", "--epochs", "2", "--samples", "200",
                              "--shape", "4", "--launcher", launcher, "--serve-options", "--rubber-band 4 --slots 8"],
                             capture_output=True, text=True, timeout=300, env=dict(os.environ))
        self.assertEqual(0, out.returncode, out.stderr)
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        trials, summary = lines[:-1], lines[-1]
        self.assertEqual([1.0, 4.0], [t["step_ms"] for t in trials])
        self.assertTrue(all(len(t["shared_epochs_samples_per_s"]) == 2 for t in trials), trials)
        for t in trials:
            self.assertGreater(t["alone_samples_per_s"], 0)
            self.assertGreater(t["shared_samples_per_s"], 0)
            self.assertAlmostEqual(t["shared_samples_per_s"] / t["alone_samples_per_s"], t["shared_of_alone"], delta=0.01)
        self.assertTrue(summary["summary"])
        self.assertEqual(min(t["shared_of_alone"] for t in trials), summary["slowest_shared_of_alone"])

    def test_over_the_jpeg_pipeline_it_says_what_each_producer_spent(self):
        try:
            import PIL  # noqa: F401  (the benchmark makes its JPEGs with it)
        except ImportError:
            self.skipTest("needs PIL to make the JPEGs")
        launcher = launcher_or_skip(self)
        with tempfile.TemporaryDirectory() as home:
            out = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "1,4", "--epochs", "2", "--jpegs", "12",
                                  "--batch-size", "4", "--crop", "32", "--launcher", launcher,
                                  "--serve-options", "--cache-mb 16 --cache-resize 40"],
                                 capture_output=True, text=True, timeout=300, env=dict(os.environ, HOME=home))
        self.assertEqual(0, out.returncode, out.stderr)
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        trials, summary = lines[:-1], lines[-1]
        self.assertEqual([1.0, 4.0], [t["step_ms"] for t in trials])
        self.assertTrue(all(t["shared_samples_per_s"] > 0 for t in trials), trials)
        self.assertTrue(all(len(t["shared_epochs_samples_per_s"]) == 2 for t in trials), trials)
        self.assertTrue(summary["source"].startswith("images:"), summary)
        self.assertTrue(summary["source"].endswith("sweep-jpegs-12, RandomResizedCrop(32)"), summary)
        self.assertGreater(summary["producer_cpu_s_alone"], 0)
        self.assertEqual(2, len(summary["producer_cpu_s_each_alone"]), summary)
        self.assertAlmostEqual(summary["producer_cpu_s_alone"], sum(summary["producer_cpu_s_each_alone"]), delta=0.02)
        self.assertGreater(summary["producer_cpu_s_shared"], 0)

    def test_with_a_pytorch_feeder_it_says_what_the_feeder_spent(self):
        try:
            import torch  # noqa: F401  (the feeder's DataLoader)
        except ImportError:
            self.skipTest("needs torch for the feeder")
        launcher_or_skip(self)
        out = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "1,4", "--epochs", "2", "--samples", "200",
                              "--shape", "4", "--feeder", "--serve-options", "slots=8"],
                             capture_output=True, text=True, timeout=300, env=dict(os.environ))
        self.assertEqual(0, out.returncode, out.stderr)
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        trials, summary = lines[:-1], lines[-1]
        self.assertEqual([1.0, 4.0], [t["step_ms"] for t in trials])
        self.assertTrue(all(t["shared_samples_per_s"] > 0 for t in trials), trials)
        self.assertEqual("feeder:200", summary["source"])
        self.assertGreater(summary["producer_cpu_s_alone"], 0)
        self.assertGreater(summary["producer_cpu_s_shared"], 0)


if __name__ == "__main__":
    unittest.main()
