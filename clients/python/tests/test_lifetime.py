"""Batch lifetime against a live producer: zero-copy views, release on the next batch, and arrays kept
past their batch's release never showing the producer's later batches.

Needs a running producer of synthetic data (at least 2 epochs or unbounded, loader batch size 16, a
default arena of 8 slots) whose directory is in $TENSORSOCKET_TEST_DIR; .ci/python-checks starts one.
Skipped without it.
"""

import gc
import os
import unittest

import numpy as np

from tensorsocket_client import BatchReleasedError, TensorConsumer
from tensorsocket_client.synthetic import SyntheticSpec

DIR = os.environ.get("TENSORSOCKET_TEST_DIR")

try:
    import torch
except ImportError:
    torch = None


@unittest.skipUnless(DIR, "needs a producer in $TENSORSOCKET_TEST_DIR (run through .ci/python-checks)")
class LifetimeTest(unittest.TestCase):
    def consumer(self, b):
        return TensorConsumer(directory=DIR, batch_size=b, connect_timeout=10, batch_timeout=20)

    def assert_intact(self, spec, data, ids, label=None):
        self.assertTrue(np.array_equal(spec.fill(ids).reshape(data.shape).view(np.uint8), data.view(np.uint8)))
        if label is not None:
            self.assertTrue(np.array_equal(spec.labels(ids), label))

    def test_a_batch_unpacks_into_its_tensors_in_the_loaders_order(self):
        with self.consumer(8) as c:
            b = next(iter(c))
            spec = SyntheticSpec.parse(c.source_description)
            self.assertEqual(["data", "label", "id"], b.keys())
            data, label, ids = b
            expected = torch.Tensor if torch is not None else np.ndarray
            for t in (data, label, ids):
                self.assertIsInstance(t, expected)
            got = np.asarray(ids)
            self.assert_intact(spec, np.asarray(data), got, np.asarray(label))
            self.assertTrue(np.array_equal(np.asarray(b[2]), got))
            with self.assertRaisesRegex(IndexError, "tensor 3 of a batch of 3 tensors"):
                b[3]

    def test_batches_inside_one_slot_are_read_only_views_of_the_arena(self):
        with self.consumer(8) as c:
            it = iter(c)
            b = next(it)
            data = b["data"]
            self.assertFalse(data.flags.writeable)
            self.assertFalse(data.flags.owndata)
            with self.assertRaises(ValueError):
                data[0] = 0
            nxt = next(it)  # the second half of the same loader batch: the same slot, 8 samples on
            step = 8 * data.strides[0]
            self.assertEqual(data.ctypes.data + step, nxt["data"].ctypes.data)

    def test_a_released_batch_refuses_access_and_kept_arrays_never_change(self):
        with self.consumer(16) as c:
            spec = SyntheticSpec.parse(c.source_description)
            it = iter(c)
            first = next(it)
            kept = (first["data"], first["id"].copy(), first["label"])
            address = kept[0].ctypes.data
            for _ in range(40):  # five times round the ring of 8 slots: the producer reused first's slot
                b = next(it)
                self.assert_intact(spec, b["data"], b["id"], b["label"])
            self.assertTrue(first.released)
            with self.assertRaises(BatchReleasedError):
                first["data"]
            self.assertEqual(address, kept[0].ctypes.data)
            self.assert_intact(spec, kept[0], kept[1], kept[2])

    def test_keeping_every_batch_never_stalls_the_producer(self):
        with self.consumer(16) as c:
            spec = SyntheticSpec.parse(c.source_description)
            kept = []
            it = iter(c)
            for _ in range(30):
                b = next(it)
                kept.append((b["data"][1:], b["id"][1:].copy()))  # views of views count too
            for data, ids in kept:
                self.assert_intact(spec, data, ids)

    def test_kept_batches_stay_valid_until_released_and_their_bytes_lie_where_file_region_says(self):
        with self.consumer(16) as c:
            spec = SyntheticSpec.parse(c.source_description)
            it = c.batches(keep=True)
            kept = [next(it) for _ in range(4)]  # half the ring, none released by asking for the next
            for b in kept:
                self.assertFalse(b.released)
                self.assert_intact(spec, b["data"], b["id"], b["label"])
                fd, offset = b.file_region("data")
                raw = os.pread(fd, b["data"].nbytes, offset)  # what another process reads through /proc/<pid>/fd
                self.assertEqual(b["data"].tobytes(), raw)
            for b in reversed(kept):  # in any order
                b.release()
            for _ in range(20):  # round the ring of 8 slots twice: nothing was left held
                b = next(it)
                self.assert_intact(spec, b["data"], b["id"], b["label"])
                b.release()
        with self.consumer(23) as c:
            b = next(iter(c))
            self.assertIsNone(b.file_region("data"), "a batch gathered from two slots lies in no one place")

    def test_spanning_batches_are_gathered_and_stay_valid(self):
        with self.consumer(23) as c:
            spec = SyntheticSpec.parse(c.source_description)
            it = iter(c)
            kept = [next(it)["data"] for _ in range(1)]
            batches = []
            for _ in range(6):
                b = next(it)
                batches.append((b["data"], b["id"].copy()))
            for data, i in batches:
                self.assert_intact(spec, data, i)
            self.assertTrue(kept[0].flags.owndata or kept[0].base is not None)

    def test_arrays_outlive_the_consumer(self):
        c = self.consumer(16)
        spec = SyntheticSpec.parse(c.source_description)
        b = next(iter(c))
        data, ids = b["data"], b["id"].copy()
        c.close()
        with self.assertRaises(BatchReleasedError):
            b["id"]
        gc.collect()
        with self.consumer(16) as other:  # another consumer keeps the producer moving meanwhile
            it = iter(other)
            for _ in range(20):
                next(it)
        self.assert_intact(spec, data, ids)

    @unittest.skipUnless(torch, "needs torch")
    def test_torch_tensors_share_the_memory_and_stay_valid(self):
        with self.consumer(16) as c:
            spec = SyntheticSpec.parse(c.source_description)
            it = iter(c)
            b = next(it)
            t = b.torch()
            self.assertEqual(b["data"].ctypes.data, t["data"].data_ptr())
            self.assertEqual(torch.int64, t["label"].dtype)
            ids = t["id"].clone().numpy()
            data = t["data"]
            for _ in range(30):
                next(it)
            self.assert_intact(spec, data.numpy(), ids)


if __name__ == "__main__":
    unittest.main()
