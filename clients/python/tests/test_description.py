"""The normalisation words of a source description read the same as io.tensorsocket.pipeline.Normalization
reads them (NormalizationTest checks the Java side with the same strings)."""

import unittest

from tensorsocket_client.description import normalization


class NormalizationTest(unittest.TestCase):

    def test_an_idx_description_announces_mean_and_std(self):
        d = "idx mean=0.286 std=0.353 images=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz samples=60000"
        self.assertEqual((0.286, 0.353), normalization(d))

    def test_only_whole_words_count(self):
        self.assertIsNone(normalization("synthetic:samples=10,shape=4,dtype=float32,seed=1"))
        self.assertIsNone(normalization("image-folder transforms=Normalize(mean=(0.5, 0.5, 0.5))"))
        self.assertEqual((-1.5, 2e-3), normalization("x std=2e-3 mean=-1.5"))

    def test_half_or_garbled_announcements_are_errors(self):
        for d in ("idx mean=0.5 images=a", "idx mean=0.5 std=0", "idx mean=1e std=1"):
            with self.assertRaises(ValueError, msg=d):
                normalization(d)


if __name__ == "__main__":
    unittest.main()
