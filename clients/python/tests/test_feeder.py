import unittest

import numpy as np

from tensorsocket_client.__main__ import synthetic_epochs
from tensorsocket_client.feeder import _dtype_code, _named
from tensorsocket_client.synthetic import SyntheticSpec

try:
    import torch
except ImportError:  # numpy-only installs
    torch = None


class NamingTest(unittest.TestCase):
    def test_dicts_keep_their_keys_and_names_pick_and_order_them(self):
        b = {"label": np.zeros(4, np.int64), "image": np.zeros((4, 3), np.float32)}
        self.assertEqual(["label", "image"], [n for n, _ in _named(b, None)])
        self.assertEqual(["image", "label"], [n for n, _ in _named(b, ("image", "label"))])
        with self.assertRaisesRegex(ValueError, "asks for"):
            _named(b, ("image", "target"))

    def test_tuples_are_data_and_label_unless_named(self):
        b = (np.zeros((4, 2), np.float32), np.zeros(4, np.int64))
        self.assertEqual(["data", "label"], [n for n, _ in _named(b, None)])
        self.assertEqual(["x", "y"], [n for n, _ in _named(b, ("x", "y"))])
        with self.assertRaisesRegex(ValueError, "2 tensors per batch"):
            _named(b, ("x",))
        self.assertEqual(["data"], [n for n, _ in _named(np.zeros((4, 2)), None)])

    @unittest.skipIf(torch is None, "needs torch")
    def test_torch_tensors_become_numpy_views_without_a_copy(self):
        t = torch.arange(12, dtype=torch.float32).reshape(4, 3)
        (_, a), = _named([t], ("x",))
        self.assertEqual(t.data_ptr(), a.ctypes.data)

    def test_dtype_codes_are_the_protocols(self):
        codes = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.float16: 6, np.float32: 8,
                 np.float64: 9, np.bool_: 10}
        for dt, code in codes.items():
            self.assertEqual(code, _dtype_code(np.zeros(1, dt)), dt)
        with self.assertRaisesRegex(TypeError, "no TensorSocket type"):
            _dtype_code(np.zeros(1, np.complex64))


class SyntheticFeedTest(unittest.TestCase):
    def test_the_fed_batches_are_the_generators_epoch_in_its_order(self):
        spec = SyntheticSpec.parse("samples=103,shape=2x3,dtype=int16,seed=9")
        batches = list(synthetic_epochs(spec, 25)(1))
        self.assertEqual([25, 25, 25, 25, 3], [len(b["id"]) for b in batches])
        ids = np.concatenate([b["id"] for b in batches])
        np.testing.assert_array_equal(spec.order(1), ids)
        np.testing.assert_array_equal(spec.fill(ids[:25]), batches[0]["data"])
        np.testing.assert_array_equal(spec.labels(ids[:25]), batches[0]["label"])


if __name__ == "__main__":
    unittest.main()
