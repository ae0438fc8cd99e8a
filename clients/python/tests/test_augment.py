"""A trial's own augmentation (SampleAugment): per-sample seeds that replay anywhere, a batch augmented as its
private data set augments each sample whatever the batch's order and size, the caller's random state untouched, and
refusals that say what the batches lack. The shared path through a real producer is ShareProcessTest's."""

import unittest

try:
    import torch

    from tensorsocket_client.augment import Indexed, SampleAugment, sample_seed
except ImportError:  # numpy-only installs
    torch = None


class _Samples:
    """(image, label, index) samples, as a data set of decoded images returns them."""

    def __len__(self):
        return 40

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(1000 + i)
        return torch.randint(0, 256, (3, 8, 8), generator=g, dtype=torch.uint8), i % 10, i


def _jitter(x):
    """A random augmentation of torch's generator: a flip half the time, then noise."""
    if torch.rand(()) < 0.5:
        x = x.flip(-1)
    return x.float() + torch.randn(x.shape)


def _in_place(x):
    return x.mul_(2)


@unittest.skipIf(torch is None, "needs torch")
class SampleAugmentTest(unittest.TestCase):
    def test_seeds_are_fixed_numbers_that_differ_by_seed_epoch_and_sample(self):
        self.assertEqual(sample_seed(7, 0, 0), sample_seed(7, 0, 0))
        seeds = {sample_seed(s, e, i) for s in (0, 7) for e in range(3) for i in range(50)}
        self.assertEqual(2 * 3 * 50, len(seeds))
        self.assertTrue(all(0 <= s < 1 << 63 for s in seeds))
        # fixed: a seed is the same in every process and release (a change would change every trial's augmentation)
        self.assertEqual(sample_seed(0, 0, 0), sample_seed(0, 0, 0) & ((1 << 63) - 1))
        self.assertEqual(825034979826561905, sample_seed(7, 1, 2))

    def test_a_batch_is_augmented_as_the_private_data_set_augments_each_sample(self):
        data = _Samples()
        aug = SampleAugment(_jitter, seed=3)
        private = aug.over(data)
        for epoch in (0, 1):
            private.set_epoch(epoch)
            want = {i: private[i][0] for i in range(len(data))}
            order = torch.randperm(len(data), generator=torch.Generator().manual_seed(epoch)).tolist()
            for size in (1, 7, 40):  # any batch size, any order
                for start in range(0, len(order), size):
                    ids = order[start:start + size]
                    batch = (torch.stack([data[i][0] for i in ids]), torch.tensor([i % 10 for i in ids]),
                             torch.tensor(ids))
                    images, labels, got_ids = aug.batch(batch, epoch)
                    self.assertEqual(ids, got_ids.tolist())
                    self.assertTrue(torch.equal(labels, batch[1]))
                    for row, i in zip(images, ids):
                        self.assertTrue(torch.equal(row, want[i]), "sample %d of epoch %d" % (i, epoch))
        private.set_epoch(0)
        first = private[5][0]
        private.set_epoch(1)
        self.assertFalse(torch.equal(first, private[5][0]), "epochs augment a sample differently")
        other = SampleAugment(_jitter, seed=4).over(data)
        self.assertFalse(torch.equal(first, other[5][0]), "seeds augment a sample differently")

    def test_the_callers_random_state_and_the_served_rows_are_left_as_they_were(self):
        data = _Samples()
        rows = torch.stack([data[i][0] for i in range(4)])
        served = rows.clone()
        torch.manual_seed(123)
        expected = torch.rand(3)
        torch.manual_seed(123)
        SampleAugment(_in_place, seed=1).batch((rows, torch.arange(4)), 0)
        self.assertTrue(torch.equal(expected, torch.rand(3)), "the caller's generator moved")
        self.assertTrue(torch.equal(served, rows), "a transform working in place changed the served batch")

    def test_indexed_adds_each_samples_index_as_its_last_field(self):
        pairs = [(torch.zeros(2), 3), (torch.ones(2), 4)]
        self.assertEqual(2, len(Indexed(pairs)))
        image, label, index = Indexed(pairs)[1]
        self.assertTrue(torch.equal(image, torch.ones(2)))
        self.assertEqual((4, 1), (label, index))
        self.assertEqual(("a", 0), Indexed(["a", "b"])[0])
        batch = next(iter(torch.utils.data.DataLoader(Indexed(pairs), batch_size=2)))
        self.assertEqual([0, 1], batch[-1].tolist())  # collated: what SampleAugment reads its ids from

    def test_batches_without_sample_ids_are_refused_saying_what_is_needed(self):
        aug = SampleAugment(_jitter)
        images = torch.zeros(4, 3, 8, 8, dtype=torch.uint8)
        for batch, says in (((images, torch.zeros(4)), "one integer per sample"),
                            ((images, torch.arange(3)), "one integer per sample"),
                            ((images,), "one integer per sample"),
                            ({"image": images}, "tuples of tensors")):
            with self.assertRaises((ValueError, TypeError)) as e:
                aug.batch(batch, 0)
            self.assertIn(says, str(e.exception))
        with self.assertRaises(ValueError) as e:
            SampleAugment(_jitter, ids=5).batch((images, torch.arange(4)), 0)
        self.assertIn("reads field 0 (the data) and field 5 (the sample ids) of each batch, which has 2 fields",
                      str(e.exception))
        with self.assertRaises(TypeError):
            SampleAugment("flip")


if __name__ == "__main__":
    unittest.main()
