"""The reference TensorSocket's users: its import paths work, its call signatures are refused saying the call here."""
import unittest

import numpy as np

import tensorsocket_client
from tensorsocket.consumer import TensorConsumer
from tensorsocket.producer import TensorProducer


class ReferenceTest(unittest.TestCase):
    def test_the_reference_import_paths_give_this_clients_classes(self):
        self.assertIs(tensorsocket_client.TensorProducer, TensorProducer)
        self.assertIs(tensorsocket_client.TensorConsumer, TensorConsumer)

    def test_the_reference_producer_call_is_refused_showing_the_call_here(self):
        loader = [np.zeros((4, 2), np.float32)]
        with self.assertRaises(TypeError) as e:
            TensorProducer(loader, "5556", "5557", rubber_band_pct=0.02)
        self.assertIn("TensorProducer(data_loader, '5556', ...) is the reference TensorSocket's signature", str(e.exception))
        self.assertIn('TensorProducer("NAME", data_loader, rubber_band=B)', str(e.exception))

    def test_the_reference_consumer_call_is_refused_showing_the_call_here(self):
        with self.assertRaises(TypeError) as e:
            TensorConsumer("5556", "5557", batch_size=64)
        self.assertIn("TensorConsumer('5556', '5557', ...) is the reference TensorSocket's signature", str(e.exception))
        self.assertIn('TensorConsumer("NAME", batch_size=64)', str(e.exception))

    def test_a_numeric_name_with_a_batch_size_is_not_the_reference(self):
        with self.assertRaises(ValueError):  # batch_size=0 is refused by this client's own rule, not as the reference
            TensorConsumer("5556", 0)


if __name__ == "__main__":
    unittest.main()
