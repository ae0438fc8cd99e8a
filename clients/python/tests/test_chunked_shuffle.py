"""The exact-epoch rule's port draws what the Java ChunkedShuffle draws (docs/test-vectors/chunked-shuffle.txt),
and keeps every chunk's samples."""

import os
import unittest

from tensorsocket_client import stream
from tensorsocket_client.synthetic import SplittableRandom

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "test-vectors", "chunked-shuffle.txt")


def ints(text):
    return [] if text == "-" else [int(v) for v in text.split(",")]


class ChunkedShuffleTest(unittest.TestCase):
    def test_the_port_draws_the_java_orders(self):
        with open(VECTORS, encoding="utf-8") as f:
            lines = [line.split() for line in f if not line.startswith("#")]
        self.assertGreaterEqual(len(lines), 9)
        for line in lines:
            with self.subTest(" ".join(line)[:60]):
                if line[0] == "first":
                    _, n, seed, _, order = line
                    self.assertEqual(ints(order), stream.chunked_first(int(n), SplittableRandom(int(seed))))
                elif line[0] == "epoch":  # a feeder's seed and an epoch: what the feeder predicts of epoch 0
                    _, n, seed, epoch, _, order = line
                    got = stream.chunked_first(int(n), stream.epoch_random(int(seed), int(epoch)))
                    self.assertEqual(ints(order), got)
                else:
                    _, seed, boundaries, previous, _, order = line
                    got = stream.chunked_next(ints(previous), ints(boundaries), SplittableRandom(int(seed)))
                    self.assertEqual(ints(order), got)

    def test_chunks_keep_their_samples_and_bad_boundaries_are_refused(self):
        first = stream.chunked_first(100, SplittableRandom(3))
        nxt = stream.chunked_next(first, [10, 60], SplittableRandom(4))
        for a, b in ((0, 10), (10, 60), (60, 100)):
            self.assertEqual(sorted(first[a:b]), sorted(nxt[a:b]))
        for bad in ([0], [100], [20, 10], [10, 10]):
            with self.assertRaises(ValueError):
                stream.chunked_next(first, bad, SplittableRandom(5))


if __name__ == "__main__":
    unittest.main()
