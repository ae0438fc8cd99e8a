"""The share's log tells the next trial whether the last start failed for lack of shared memory, and if room was made."""
import os
import tempfile
import unittest
from pathlib import Path

from tensorsocket_client import _share_log


def no_space(needed: int) -> str:
    # the line Java's SharedMemoryFullException gives, as the producer's `serve` prints it
    return ("tensorsocket: error: not enough shared memory in /dev/shm/tensorsocket-u/big: the arena needs %d bytes"
            " (1.0 MiB) but only 10 bytes (0.0 MiB) are free; use a smaller arena" % needed)


class ShareLogTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = Path(self.dir.name)
        self.log = self.base / ".big.share.log"

    def tearDown(self):
        self.dir.cleanup()

    def write(self, *entries):
        with open(self.log, "wb") as f:
            for pid, lines in entries:
                f.write(_share_log.start_entry(pid, ["python", "-m", "tensorsocket_client", "share-serve"]))
                f.write("".join(line + "\n" for line in lines).encode("utf-8"))

    def test_a_last_start_that_failed_for_lack_of_space_stops_the_next_while_space_is_still_short(self):
        more_than_free = _share_log.free_bytes(self.base) + (1 << 40)
        self.write((41, ["feeding"]), (42, ["loading", no_space(more_than_free)]))
        why = _share_log.space_still_short(self.log, self.base)
        self.assertIsNotNone(why)
        self.assertIn("failed for lack of shared memory when pid 42 started it at ", why)
        self.assertIn("the %d its arena needs" % more_than_free, why)
        self.assertTrue(why.endswith(no_space(more_than_free)[len("tensorsocket: error: "):]), why)

    def test_room_made_since_lets_it_start_again(self):
        self.write((42, [no_space(1)]))
        self.assertIsNone(_share_log.space_still_short(self.log, self.base))

    def test_only_the_last_start_counts(self):
        self.write((42, [no_space(1 << 62)]), (43, ["serving"]))
        self.assertIsNone(_share_log.space_still_short(self.log, self.base))

    def test_no_log_or_an_empty_one_says_nothing(self):
        self.assertIsNone(_share_log.space_still_short(self.log, self.base))
        self.log.write_bytes(b"")
        self.assertIsNone(_share_log.space_still_short(self.log, self.base))
        self.assertEqual("(no output: %s)" % (self.base / "missing"), _share_log.tail(self.base / "missing"))

    def test_the_tail_is_the_last_lines(self):
        self.write((42, [str(i) for i in range(30)]))
        self.assertEqual([str(i) for i in range(20, 30)], _share_log.tail(self.log, 10).splitlines())
        os.unlink(str(self.log))


if __name__ == "__main__":
    unittest.main()
