"""Trials that augment the decoded samples themselves (``share(..., augment=SampleAugment(T))``): decoded samples of
any size in rows and back, rows sized from the data set's files, the transform found through the documented wrappers,
one load per sample under concurrent loads, and through a real producer: each trial's samples equal to its private
pipeline's for a PIL transform over images of different sizes, in worker processes of its own, whose failures reach
the loop with their cause."""

import multiprocessing
import os
import signal
import sys
import tempfile
import time
import unittest
from unittest import mock

import numpy as np

try:
    import torch
    import torchvision
    from PIL import Image
    from torch.utils.data import Subset

    from tensorsocket_client import _decoded
    from tensorsocket_client._decoded_cache import CachedLoad, DecodedCache, loads, split
    from tensorsocket_client.augment import Indexed, SampleAugment
except ImportError:  # numpy-only installs
    torch = None

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")
SIZES = ((64, 48), (50, 61), (61, 47), (33, 40))
"""The images' sizes (width, height): four, so rows hold images smaller than the largest."""


def _folder(root):
    rng = np.random.default_rng(9)
    for c in range(2):
        os.makedirs(os.path.join(root, "c%d" % c))
        for i in range(10):
            w, h = SIZES[(i + c) % len(SIZES)]
            Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(
                os.path.join(root, "c%d" % c, "%d.jpg" % i), quality=90)
    return root


def _equal(a, b):
    if isinstance(a, Image.Image):
        return a.mode == b.mode and a.size == b.size and a.tobytes() == b.tobytes()
    return type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())


@unittest.skipIf(torch is None, "needs torch, torchvision and PIL")
class RowsTest(unittest.TestCase):
    def test_samples_of_any_size_and_kind_come_back_equal_from_their_rows(self):
        rng = np.random.default_rng(1)
        samples = [Image.fromarray(rng.integers(0, 255, (7, 5, 3), dtype=np.uint8)),
                   Image.fromarray(rng.integers(0, 255, (3, 9), dtype=np.uint8)),            # L
                   Image.fromarray(rng.integers(0, 255, (4, 4, 4), dtype=np.uint8), "RGBA"),
                   torch.arange(24, dtype=torch.float32).reshape(2, 3, 4),
                   rng.integers(0, 9, (5,)).astype(np.int16)]
        collate = _decoded.DecodedCollate(width=_decoded.row_width(None, samples))
        batch = collate([(s, i % 3, i) for i, s in enumerate(samples)])
        self.assertEqual([_decoded.DECODED, _decoded.SHAPE, "1", _decoded.IDS], list(batch))
        self.assertEqual([0, 1, 2, 0, 1], batch["1"].tolist())
        self.assertEqual(list(range(5)), batch[_decoded.IDS].tolist())
        rows, heads = batch[_decoded.DECODED].numpy(), batch[_decoded.SHAPE].numpy()
        for k, s in enumerate(samples):
            self.assertTrue(_equal(s, _decoded.unpack(rows[k], heads[k])), "sample %d" % k)
        self.assertEqual("a 5x7 RGB image", _decoded.describe(heads[0]))
        self.assertEqual("a float32 tensor of shape (2, 3, 4)", _decoded.describe(heads[3]))

    def test_what_a_row_cannot_hold_is_refused_saying_what_to_do(self):
        big = Image.new("RGB", (40, 30))
        with self.assertRaisesRegex(ValueError, r"sample 6 decodes to a 40x30 RGB image of 3600 bytes, more than the "
                                                r"128 bytes .*\(share\(\.\.\., producer_options=\{'decoded_bytes': 5440"):
            _decoded.DecodedCollate(128)([(big, 6)])
        with self.assertRaisesRegex(ValueError, r"PIL mode 'P' cannot be shared .* convert it"):
            _decoded.DecodedCollate(128)([(Image.new("P", (2, 2)), 0)])
        with self.assertRaisesRegex(ValueError, "this data set gives dicts"):
            _decoded.PackedLoad(lambda i: {"image": 1})(0)
        with self.assertRaisesRegex(ValueError, "decoded_bytes is the bytes one decoded sample may take"):
            _decoded.row_width(None, [big], given=0)

    def test_rows_are_sized_from_the_image_files_or_from_the_first_samples_with_room(self):
        with tempfile.TemporaryDirectory() as d:
            folder = torchvision.datasets.ImageFolder(_folder(d))
            first = folder[0][0]
            most = max(w * h for w, h in SIZES) * 3
            self.assertEqual(-(-most // 64) * 64, _decoded.row_width(Indexed(folder), [first]),
                             "the largest file's pixels in the first sample's bands, through Indexed")
        self.assertEqual(-(-int(first.width * first.height * 3 * 1.5) // 64) * 64, _decoded.row_width(None, [first]))
        self.assertEqual(1024, _decoded.row_width(None, [first], given=1000))

    def test_a_producers_description_says_it_serves_decoded_samples_and_its_workers(self):
        marked = _decoded.marked("share:m:f {} #ab", 3)
        self.assertEqual(("share:m:f {} #ab", 3), _decoded.unmarked(marked))
        self.assertEqual(("share:m:f {} #ab", None), _decoded.unmarked("share:m:f {} #ab"))


@unittest.skipIf(torch is None, "needs torch, torchvision and PIL")
class WrappersTest(unittest.TestCase):
    def test_the_transform_is_found_through_indexed_and_subset(self):
        with tempfile.TemporaryDirectory() as d:
            t = torchvision.transforms.Compose([torchvision.transforms.CenterCrop(8),
                                                torchvision.transforms.PILToTensor()])
            folder = torchvision.datasets.ImageFolder(_folder(d), transform=t)
            load, augment = split(Indexed(folder))
            image, label, index = load(3)
            self.assertIsInstance(image, Image.Image, "loaded with the transform off")
            self.assertEqual((folder.targets[3], 3), (label, index))
            done = augment((image, label, index))
            self.assertTrue(torch.equal(Indexed(folder)[3][0], done[0]))
            self.assertEqual((label, index), done[1:])
            self.assertIs(t, folder.transform, "the transform is back in place")
            subset = Subset(Indexed(folder), [5, 2])
            self.assertEqual(2, loads(subset)(1)[2])
            self.assertIsInstance(loads(subset)(1)[0], Image.Image)

    def test_a_data_set_of_neither_form_is_loaded_as_it_is(self):
        class Plain:
            def __getitem__(self, i):
                return (i, -i)

        self.assertEqual((4, -4), loads(Plain())(4))


@unittest.skipIf(torch is None, "needs torch")
class OutputRingTest(unittest.TestCase):
    def test_a_batch_the_loop_keeps_keeps_its_bytes_and_one_it_let_go_is_written_in_place(self):
        from tensorsocket_client._output_ring import OutputRing
        ring = OutputRing(2, (4, 3), torch.float32)
        self.addCleanup(ring.close)
        ring.batch(0).copy_(torch.arange(12, dtype=torch.float32).reshape(4, 3))
        kept = ring.batch(0, 3)[1:]  # a view of what the loop got, kept across steps
        first = kept.clone()
        ring.reuse(0)  # slot 0 due again: the kept batch is copied aside, the slot mapped anew
        ring.batch(0).fill_(-1)
        self.assertTrue(torch.equal(first, kept), "a kept batch keeps its bytes")
        self.assertTrue(bool((ring.batch(0) == -1).all()), "the slot itself holds what was written next")
        self.assertEqual(1, ring.detached)
        del kept
        address = ring.batch(1).data_ptr()
        ring.reuse(1)  # nothing views slot 1: written in place
        self.assertEqual((0, address), (ring.detached - 1, ring.batch(1).data_ptr()))
        halves = OutputRing(1, (2, 2), torch.bfloat16)
        self.addCleanup(halves.close)
        halves.batch(0).copy_(torch.tensor([[1.5, 2], [3, 4]], dtype=torch.bfloat16))
        self.assertEqual([[1.5, 2.0], [3.0, 4.0]], halves.batch(0).float().tolist())


@unittest.skipIf(torch is None, "needs torch, torchvision and PIL")
class RefusalsTest(unittest.TestCase):
    def test_what_cannot_serve_or_run_an_augmentation_is_refused_saying_what_to_do(self):
        import torch.utils.data as tud

        from tensorsocket_client import TensorProducer
        with self.assertRaisesRegex(ValueError, "SampleAugment's workers are 0 .* or more, not -1"):
            SampleAugment(lambda x: x, workers=-1)
        with self.assertRaisesRegex(ValueError, "prefetch_factor is 1 or more"):
            SampleAugment(lambda x: x, prefetch_factor=0)
        from tensorsocket_client._augment_workers import _Plan
        tensors = [("image", "uint8", (3, 8, 8)), ("label", "int64", ()), ("id", "float32", ())]
        aug = SampleAugment(lambda x: x)
        with self.assertRaisesRegex(ValueError, r"augment= over a producer that serves tensors \(not decoded samples\) "
                                                r"needs names="):
            _Plan(tensors, aug, None)
        with self.assertRaisesRegex(ValueError, r"needs each sample's id .* in field -1 .*; that field holds float32"):
            _Plan(tensors, aug, ("image", "label", "id"))
        with self.assertRaisesRegex(ValueError, r"reads field 0 \(the data\) and field 5 \(the sample ids\) of each "
                                                r"batch, which has 3 fields"):
            _Plan(tensors, SampleAugment(lambda x: x, ids=5), ("image", "label", "id"))
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            data = Indexed(torchvision.datasets.ImageFolder(_folder(os.path.join(d, "images"))))

            class Stream(tud.IterableDataset):
                def __iter__(self):
                    return iter(range(3))

            with self.assertRaisesRegex(ValueError, "augment= serves a torch DataLoader's map-style data set by "
                                                    "index, its samples decoded, for each trial to augment; this "
                                                    "loader reads an IterableDataset"):
                TensorProducer("refused", tud.DataLoader(Stream(), batch_size=2), decoded=True)
            with self.assertRaisesRegex(ValueError, r"the factory's loader has a collate function of its own "
                                                    r"\(mine\): leave it out of the loader and give it to "
                                                    r"SampleAugment"):
                def mine(batch):
                    return batch
                TensorProducer("refused", tud.DataLoader(data, batch_size=2, collate_fn=mine), decoded=True)


def _load_all(load, n, out):
    for i in range(n):
        out.put((i, int(load(i)[0])))


class _Counting:
    """Loads that take a while and count themselves in shared memory."""

    def __init__(self, n):
        self.counts = multiprocessing.get_context("fork").Array("i", n)

    def __call__(self, i):
        with self.counts.get_lock():
            self.counts[i] += 1
        time.sleep(0.003)
        return np.full(64, i, np.int64)


@unittest.skipIf(torch is None, "needs torch")
class ConcurrentLoadsTest(unittest.TestCase):
    def test_processes_loading_the_same_ids_at_once_load_and_store_each_sample_once(self):
        n = 40
        counting = _Counting(n)
        cache = DecodedCache(1 << 20, n)
        load = CachedLoad(counting, cache)
        ctx = multiprocessing.get_context("fork")
        out = ctx.Queue()
        procs = [ctx.Process(target=_load_all, args=(load, n, out)) for _ in range(3)]
        for p in procs:
            p.start()
        got = [out.get(timeout=60) for _ in range(3 * n)]
        for p in procs:
            p.join(30)
        self.assertTrue(all(i == v for i, v in got), "every process got every sample right")
        self.assertEqual([1] * n, list(counting.counts), "each sample loaded once")
        used, held, hits, loads_ = cache.counts()
        self.assertEqual(n, held, "each sample stored once")
        self.assertEqual((2 * n, n), (hits, loads_))
        self.assertLessEqual(used, cache.capacity)

    def test_a_load_that_raises_lets_the_others_load_the_sample(self):
        cache = DecodedCache(1 << 20, 4)

        def broken(i):
            raise OSError("truncated file")

        with self.assertRaisesRegex(OSError, "truncated"):
            CachedLoad(broken, cache)(2)
        self.assertEqual(7, CachedLoad(lambda i: 7, cache)(2), "not left waiting on the failed load's claim")


@unittest.skipIf(torch is None, "needs torch, torchvision and PIL")
class SharedAugmentTest(unittest.TestCase):
    """Through a real producer started by share(): an ImageFolder of JPEGs of four sizes, the factory's own transform
    turned off, each trial's PIL transform run in its workers."""

    @classmethod
    def setUpClass(cls):
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            raise unittest.SkipTest("no tensorsocket launcher (build the command line first)")
        cls.images = tempfile.TemporaryDirectory()
        _folder(cls.images.name)
        sys.path.insert(0, SCRIPTS)

    @classmethod
    def tearDownClass(cls):
        cls.images.cleanup()

    def setUp(self):
        self.base = tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        patch = mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": self.base.name})
        patch.start()
        self.addCleanup(self.base.cleanup)
        self.addCleanup(patch.stop)

    def share(self, name, augment, batch_size, **kwargs):
        from tensorsocket_client import share
        loader = share(name, "share_loaders:photos", batch_size=batch_size, kwargs={"root": self.images.name},
                       linger=1.0, augment=augment, **kwargs)
        self.addCleanup(loader.dataset.close)
        return loader

    def test_each_trial_gets_its_private_pipelines_samples_from_one_decoding(self):
        import share_loaders
        trials = [(SampleAugment(share_loaders.photo_transform(24, 0.3), seed=3), 5),
                  (SampleAugment(share_loaders.photo_transform(20, 0.8), seed=4, workers=1), 8)]
        loaders = [self.share("photos", aug, b, cache_mb=8) for aug, b in trials]
        self.assertEqual(1, len({ld.dataset.consumer._welcome.producer_pid for ld in loaders}), "one producer")
        for (aug, _), loader in zip(trials, loaders):
            private = aug.over(Indexed(torchvision.datasets.ImageFolder(self.images.name)))
            for epoch in range(2):
                private.set_epoch(epoch)
                seen = []
                for images, labels, ids in loader:
                    for image, label, i in zip(images, labels.tolist(), ids.tolist()):
                        want = private[i]
                        self.assertTrue(torch.equal(want[0], image), "sample %d of epoch %d" % (i, epoch))
                        self.assertEqual(want[1], label)
                    seen += ids.tolist()
                self.assertEqual(list(range(20)), sorted(seen), "an exact epoch")
        self.assertEqual([2, 1], [ld.dataset._stage.workers for ld in loaders],
                         "the factory loader's num_workers by default, or as the trial says")

    def test_an_epoch_the_loop_broke_off_leaves_the_next_whole_and_its_workers_anew(self):
        # batch 8 of the producer's 8: the workers read the batches in the arena, held until their results come back;
        # a loop that breaks off leaves some held, and perhaps read: the workers are ended before they go back
        import share_loaders
        aug = SampleAugment(share_loaders.photo_transform(24, 0.3), seed=5, workers=2)
        loader = self.share("broken", aug, 8, cache_mb=8)
        private = aug.over(Indexed(torchvision.datasets.ImageFolder(self.images.name)))
        next(iter(loader))  # one batch of the epoch, then the loop breaks off
        before = _children(os.getpid())
        self.assertEqual(2, len(before), before)
        private.set_epoch(1)
        seen = []
        for images, _labels, ids in loader:
            for image, i in zip(images, ids.tolist()):
                self.assertTrue(torch.equal(private[i][0], image), "sample %d of epoch 1" % i)
            seen += ids.tolist()
        self.assertEqual(list(range(20)), sorted(seen), "the epoch after the broken one is whole")
        self.assertFalse(set(before) & set(_children(os.getpid())), "its workers were started anew")
        self.assertEqual(0, len(loader.dataset._stage._kept), "nothing held after a whole epoch")

    def test_a_trial_without_augment_is_refused_by_a_decoded_producer_naming_why(self):
        import share_loaders

        from tensorsocket_client.share import ShareMismatch
        self.share("mixed", SampleAugment(share_loaders.photo_transform()), 4)
        with self.assertRaisesRegex(ShareMismatch, "serves the factory's samples decoded, for trials that give "
                                                   "augment=, and this trial gives none"):
            self.share("mixed", None, 4)

    def test_a_transform_that_raises_reaches_the_loop_with_its_cause(self):
        import share_loaders
        loader = self.share("raising", SampleAugment(share_loaders.Failing(broken=(61, 47)), workers=2), 4)
        # from a worker (with its traceback), or from the first sample, which the trial's process augments itself
        with self.assertRaisesRegex(ValueError, r"cannot crop this 61x47 image: it is the broken one"):
            for _ in loader:
                pass

    def test_a_transform_whose_samples_differ_in_shape_is_an_error_saying_so(self):
        import torchvision.transforms as T
        loader = self.share("shapes", SampleAugment(T.PILToTensor(), workers=1), 8)  # no crop: the files' own sizes
        with self.assertRaisesRegex(ValueError, r"the transform gave sample \d+ a uint8 tensor of shape \(3, \d+, "
                                                r"\d+\) where the first sample it augmented gave a uint8 tensor of "
                                                r"shape \(3, \d+, \d+\): a batch stacks samples of one shape"):
            for _ in loader:
                pass

    def test_a_killed_augmentation_worker_is_an_error_naming_it(self):
        import share_loaders

        from tensorsocket_client._augment_workers import AugmentWorkerDied
        loader = self.share("killed", SampleAugment(share_loaders.Failing(ms=30), workers=2), 4)
        it = iter(loader)
        next(it)
        workers = _children(os.getpid())
        self.assertEqual(2, len(workers), workers)
        # torch notices a death by SIGCHLD: where the signal lands in the loop's wait for a batch the error is
        # AugmentWorkerDied at once; where it lands outside (between batches) it is torch's own RuntimeError naming the
        # worker, and the next batch asked for is AugmentWorkerDied. Either way the stage's workers are ended then.
        os.kill(workers[0], signal.SIGKILL)
        try:
            for _ in it:
                pass
            self.fail("the epoch went on without its killed worker")
        except AugmentWorkerDied as e:
            died = e
        except RuntimeError as e:
            self.assertRegex(str(e), r"DataLoader worker \(pid \d+\) (exited unexpectedly|is killed by signal)")
            with self.assertRaises(AugmentWorkerDied) as raised:
                for _ in it:
                    pass
            died = raised.exception
        self.assertRegex(str(died), r"a worker process of this trial's augmentation ended without its batch \(.+\): "
                                    r"the transform crashed it, or it was killed")
        deadline = time.monotonic() + 10
        while _children(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual([], _children(os.getpid()), "the other worker ended too")
        with self.assertRaisesRegex(ValueError, r"this trial's augmentation has ended \(its loader was closed, or a "
                                                r"worker of it died\): make the loader again"):
            next(iter(loader))


def _children(pid):
    kids = []
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids += [int(k) for k in f.read().split()]
        except OSError:
            pass
    return kids


if __name__ == "__main__":
    unittest.main()
