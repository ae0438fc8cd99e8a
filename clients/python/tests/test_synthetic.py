"""The generator port against samples the Java generator wrote (docs/test-vectors/synthetic.txt), and
java.util.SplittableRandom against values the JDK produces."""

import os
import unittest

import numpy as np

from tensorsocket_client.synthetic import SplittableRandom, SyntheticSpec, Verifier

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "test-vectors", "synthetic.txt")
FILL_SPEC = "samples=50,shape=3x5,dtype=%s,seed=-7,classes=7"
ORDER_SPEC = "samples=1000,seed=12345"


def lines(kind):
    with open(VECTORS, encoding="utf-8") as f:
        return [line.split()[1:] for line in f if line.startswith(kind + " ")]


class GeneratorTest(unittest.TestCase):
    def test_every_dtype_fills_the_bytes_java_writes(self):
        seen = set()
        for dtype, sample_id, hexbytes, label in lines("fill"):
            with self.subTest(dtype=dtype, id=sample_id):
                spec = SyntheticSpec.parse(FILL_SPEC % dtype)
                self.assertEqual(hexbytes, spec.fill([int(sample_id)]).tobytes().hex())
                self.assertEqual(int(label), spec.label(int(sample_id)))
                self.assertEqual(int(label), spec.labels([int(sample_id)])[0])
                seen.add(dtype)
        self.assertEqual(10, len(seen))

    def test_many_samples_at_once_equal_one_at_a_time(self):
        spec = SyntheticSpec.parse("samples=100,shape=9,dtype=int16,seed=5")
        many = spec.fill([3, 99, 0])
        self.assertTrue(np.array_equal(many[1], spec.fill([99])[0]))

    def test_epoch_order_is_javas(self):
        spec = SyntheticSpec.parse(ORDER_SPEC)
        for epoch, ids in lines("order"):
            with self.subTest(epoch=epoch):
                order = spec.order(int(epoch))
                self.assertEqual([int(i) for i in ids.split(",")], order[:20].tolist())
                self.assertEqual(list(range(1000)), sorted(order.tolist()))

    def test_splittable_random_matches_the_jdk(self):
        # new SplittableRandom(42): nextInt(), then nextInt(1000), nextInt(1 << 20), nextInt(1_000_000_007)
        # (values printed by JDK 25)
        r = SplittableRandom(42)
        self.assertEqual(-491277234, r.next_int())
        self.assertEqual([556, 677282, 635203165], [r.next_int(1000), r.next_int(1 << 20), r.next_int(1_000_000_007)])

    def test_parse_rejects_what_java_rejects(self):
        for bad in ["shape=3", "samples=0", "samples=5,colour=red", "samples=x", "samples=5,dtype=complex"]:
            with self.subTest(bad):
                with self.assertRaises(ValueError):
                    SyntheticSpec.parse(bad)
        s = SyntheticSpec.parse("synthetic:samples=5,shape=2x2,dtype=half,seed=-1,classes=3")
        self.assertEqual("synthetic:samples=5,shape=2x2,dtype=float16,seed=-1,classes=3", s.format())

    def test_verifier_counts_duplicates_corruption_and_order(self):
        spec = SyntheticSpec.parse("samples=20,shape=4,dtype=float32,seed=9")
        order = spec.order(0)
        v = Verifier(spec)
        ids = order[:10]
        data = spec.fill(ids)
        v.accept(data, spec.labels(ids), ids, 0)
        self.assertEqual(dict(batches=1, samples=10, unique=10, duplicates=0, corrupt=0, out_of_order=0),
                         v.finish_epoch())
        data = data.copy()
        data[2, 1] += 1
        v.accept(data, spec.labels(ids), ids, 0)
        v.accept(spec.fill(ids[:1]), spec.labels(ids[:1]), ids[:1], 0)
        counts = v.finish_epoch()
        self.assertEqual((1, 1, 10), (counts["corrupt"], counts["duplicates"], counts["unique"]))
        v.accept(data[:3], spec.labels(ids[:3]), ids[:3], 5)
        self.assertEqual(3, v.finish_epoch()["out_of_order"])


if __name__ == "__main__":
    unittest.main()
