"""jpeg_service_bench.py run short on a few generated JPEGs: this project's row (the tf.data service row is skipped,
saying so, where the Python has no tensorflow). What its figures are is the benchmark's business."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from bench_launcher import launcher_or_skip

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "jpeg_service_bench.py"


class JpegServiceBenchTest(unittest.TestCase):
    def test_it_prints_this_projects_row(self):
        try:
            import numpy as np
            from PIL import Image
        except ImportError:
            self.skipTest("needs numpy and PIL to make the JPEGs")
        launcher = launcher_or_skip(self)
        with tempfile.TemporaryDirectory() as d:
            rng = np.random.default_rng(1)
            for c in ("a", "b"):
                os.makedirs(os.path.join(d, c))
                for i in range(6):
                    pixels = rng.integers(0, 256, (48 + i, 64, 3), dtype=np.uint8)
                    Image.fromarray(pixels).save(os.path.join(d, c, "%d.jpg" % i))
            out = subprocess.run([sys.executable, str(EXAMPLE), "--images", d, "--trainers", "2", "--seconds", "1",
                                  "--warm-seconds", "1", "--cache-mb", "16", "--launcher", launcher,
                                  "--peer-python", "/nonexistent/python"],
                                 capture_output=True, text=True, timeout=300)
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertIn("SKIPPED the tf.data service row", out.stderr)
        row = json.loads(out.stdout.splitlines()[0])
        self.assertEqual("tensorsocket", row["side"])
        self.assertEqual(2, row["trainers"])
        self.assertGreater(row["samples_per_s"], 0)
        self.assertGreater(row["cpu_ms_per_sample"], 0)


if __name__ == "__main__":
    unittest.main()
