"""resume_bench.py, run short: every resumed epoch is the data set once, and it prints the time to the first batch
resumed and joined, and the samples loaded again. What the figures are is the benchmark's business."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from bench_launcher import launcher_or_skip

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "resume_bench.py"


class ResumeBenchTest(unittest.TestCase):
    def test_it_resumes_whole_epochs_and_prints_what_resuming_costs(self):
        launcher = launcher_or_skip(self)
        base = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        env = dict(os.environ, TENSORSOCKET_LAUNCHER=launcher, TENSORSOCKET_BASE=base,
                   PYTHONPATH=os.pathsep.join(sys.path))
        try:
            out = subprocess.run([sys.executable, str(EXAMPLE), "--samples", "2000", "--runs", "2"],
                                 capture_output=True, text=True, timeout=300, env=env)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        self.assertEqual(0, out.returncode, out.stderr)
        summary = json.loads(out.stdout.splitlines()[-1])
        self.assertTrue(summary["all_whole"], out.stdout)
        self.assertTrue(0 < summary["rest"] <= 1000, out.stdout)  # what was not read before the checkpoint
        self.assertEqual(summary["rest"], summary["samples_loaded_again"], out.stdout)
        self.assertGreater(summary["resume_first_batch_ms"], 0)


if __name__ == "__main__":
    unittest.main()
