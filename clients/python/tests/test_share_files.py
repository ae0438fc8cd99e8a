"""A share's files in the base directory: its end removes its lock and log, and creates nothing."""
import os
import tempfile
import unittest
from importlib import import_module
from pathlib import Path
from unittest import mock

share = import_module("tensorsocket_client.share")  # the module: the package's name share is the function


class ShareFilesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = Path(self.dir.name) / "base"
        patch = mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": str(self.base)})
        patch.start()
        self.addCleanup(patch.stop)

    def tearDown(self):
        self.dir.cleanup()

    def test_the_end_of_a_producer_whose_base_was_removed_makes_no_base_again(self):
        # a producer's feeder ends after the base directory went (a benchmark removed it while the producer lingered)
        share.remove_share_files("gone")
        self.assertFalse(self.base.exists(), "removing a share's files made its base directory again")

    def test_the_end_of_a_producer_removes_its_lock_and_log_and_leaves_the_base(self):
        self.base.mkdir()
        lock, log = self.base / ".done.share.lock", self.base / ".done.share.log"
        lock.write_bytes(b"")
        log.write_bytes(b"--- started\n")
        share.remove_share_files("done")  # no producer of the name runs: both go
        self.assertEqual([], sorted(p.name for p in self.base.iterdir()))


if __name__ == "__main__":
    unittest.main()
