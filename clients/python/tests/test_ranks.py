"""A rank's share of each epoch (the Java RankShare's rule, whose scenarios test_stream also checks) and the checks
of a consumer's job, rank and world size."""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tensorsocket_client import stream as st  # noqa: E402
from tensorsocket_client._lifecycle import job_rank  # noqa: E402


class RankShareTest(unittest.TestCase):
    def test_ranks_deal_as_distributed_sampler_with_the_last_samples_repeated(self):
        def offsets(r, w, n, drop_last):
            s = st.RankShare(r, w)
            return [s.offset(k, n, drop_last) for k in range(s.count(n, drop_last))]
        self.assertEqual([2, 6, 8], offsets(2, 4, 10, False))
        self.assertEqual([3, 7, 9], offsets(3, 4, 10, False))
        self.assertEqual([1, 5], offsets(1, 4, 10, True))
        for n in range(1, 40):
            for w in range(1, 9):
                seen = sorted(o for r in range(w) for o in offsets(r, w, n, False))
                self.assertEqual(list(range(n)), sorted(set(seen)), (n, w))  # every sample at least once
                self.assertEqual((n + w - 1) // w * w, len(seen), (n, w))  # equal shares
                dropped = sorted(o for r in range(w) for o in offsets(r, w, n, True))
                self.assertEqual(list(range(n // w * w)), dropped, (n, w))  # the tail taken by no rank

    def test_a_rank_outside_its_world_is_refused(self):
        for r, w in ((4, 4), (-1, 2), (0, 0)):
            with self.assertRaisesRegex(ValueError, "invalid"):
                st.RankShare(r, w)


class JobRankTest(unittest.TestCase):
    def test_rank_and_world_size_come_from_torchruns_environment_when_a_job_is_named(self):
        with mock.patch.dict(os.environ, {"RANK": "3", "WORLD_SIZE": "4"}):
            self.assertEqual(("j", 3, 4), job_rank("j", None, None))
            self.assertEqual(("j", 1, 4), job_rank("j", 1, None))
        self.assertIsNone(job_rank(None, None, None))

    def test_what_cannot_be_a_rank_is_refused_saying_why(self):
        with mock.patch.dict(os.environ, {"RANK": "", "WORLD_SIZE": ""}):
            with self.assertRaisesRegex(ValueError, r"job= needs rank= \(or RANK in the environment"):
                job_rank("j", None, None)
        with mock.patch.dict(os.environ, {"RANK": "one", "WORLD_SIZE": "2"}):
            with self.assertRaisesRegex(ValueError, "RANK='one' in the environment is not a number"):
                job_rank("j", None, None)
        with self.assertRaisesRegex(ValueError, "rank 4 of a world of 4 is invalid"):
            job_rank("j", 4, 4)
        with self.assertRaisesRegex(ValueError, "place a consumer in a job"):
            job_rank(None, 1, 2)
        with self.assertRaisesRegex(ValueError, "a job name has 1 to 100 characters"):
            job_rank("", 0, 1)


if __name__ == "__main__":
    unittest.main()
