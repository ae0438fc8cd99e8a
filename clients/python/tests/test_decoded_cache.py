"""The feeder's decoded-sample cache: samples kept once and shared with the loader's worker processes, a cache
smaller than the data set keeping what fits, refusals that say what to do, and a cached feed's bytes equal to an
uncached one's in every epoch."""

import mmap
import os
import pickle
import tempfile
import threading
import time
import unittest
from unittest import mock

import numpy as np

from tensorsocket_client import TensorConsumer, TensorProducer
from tensorsocket_client._decoded_cache import CachedDataset, DecodedCache

try:
    import torch
    import torch.utils.data as tud
except ImportError:  # numpy-only installs
    torch = None
try:
    import torchvision
    from PIL import Image
except ImportError:
    torchvision = None


class _Ids:
    """Samples that say their index, in the two-function form of a cache; ``load`` counts in shared memory."""

    def __init__(self, n):
        self.n = n
        self.loads = np.frombuffer(mmap.mmap(-1, 8 * n), dtype=np.int64)  # shared with the workers by fork

    def __len__(self):
        return self.n

    def load(self, i):
        self.loads[i] += 1
        return {"id": i, "x": np.full((4,), i, np.float32)}

    def augment(self, sample):
        return sample

    def __getitem__(self, i):
        return self.augment(self.load(i))


class DecodedCacheTest(unittest.TestCase):
    def test_a_kept_sample_comes_back_equal_and_is_kept_once(self):
        cache = DecodedCache(1 << 20, 4)
        sample = (np.arange(12, dtype=np.float32).reshape(3, 4), 7, "a")
        self.assertIsNone(cache.get(2))
        self.assertTrue(cache.offer(2, sample))
        self.assertFalse(cache.offer(2, sample), "kept once")
        got = cache.get(2)
        np.testing.assert_array_equal(sample[0], got[0])
        self.assertEqual(sample[1:], got[1:])
        got[0][0, 0] = 99  # a copy: what is kept stays as it was
        self.assertEqual(0, cache.get(2)[0][0, 0])
        used, held, hits, loads = cache.counts()
        self.assertEqual((1, 2, 1), (held, hits, loads))
        self.assertGreater(used, 48)

    def test_a_cache_smaller_than_the_data_set_keeps_what_fits_never_evicts_and_says_so_once(self):
        cache = DecodedCache(3 * 4096 + 600, 10)
        with self.assertLogs("tensorsocket_client", "WARNING") as logs:
            kept = [cache.offer(i, np.zeros(1024, np.float32)) for i in range(10)]
            kept += [cache.offer(i, np.zeros(1024, np.float32)) for i in range(10)]
        self.assertEqual([True] * 3 + [False] * 17, kept, "the first three fit; nothing is evicted for later ones")
        self.assertEqual(1, len(logs.output), logs.output)
        self.assertIn("cache is full (0 MiB, 3 of 10 samples kept)", logs.output[0])

    def test_caches_that_cannot_be_are_refused_saying_what_to_give(self):
        with self.assertRaisesRegex(ValueError, "holds more than 0 MiB"):
            DecodedCache(0, 10)
        with mock.patch("tensorsocket_client._decoded_cache.available_memory", return_value=1000 << 20):
            with self.assertRaisesRegex(ValueError, r"2000 MiB does not fit: this machine has 1000 MiB of memory "
                                                    r"available; give cache_mb=750 or less"):
                DecodedCache(2000 << 20, 10)

    def test_a_lock_a_dead_process_held_is_an_error_not_a_hang_and_the_cache_stays_with_forked_workers(self):
        cache = DecodedCache(1 << 20, 4)
        cache.LOCK_TIMEOUT = 0.2
        cache._lock.acquire()  # as a worker killed while it held the lock leaves it
        with self.assertRaisesRegex(RuntimeError, r"lock was not released within 0.2 s: a loader worker process died "
                                                  r"holding it; restart the feed \(or leave cache_mb out\)"):
            cache.get(0)
        with self.assertRaisesRegex(TypeError, "reaches the loader's workers by fork only"):
            pickle.dumps(cache)

    def test_a_data_set_without_either_form_is_refused_saying_what_it_needs(self):
        class Plain:
            def __len__(self):
                return 3

            def __getitem__(self, i):
                return i

        with self.assertRaisesRegex(ValueError, r"applies a `transform` attribute .* or that defines load\(i\) .* "
                                                r"and augment\(sample\) .*; Plain has neither"):
            CachedDataset(Plain(), 1 << 20)

    @unittest.skipIf(torch is None, "needs torch")
    def test_the_loaders_workers_share_what_they_keep(self):
        data = _Ids(24)
        cached = CachedDataset(data, 1 << 20)
        loader = tud.DataLoader(cached, batch_size=4, num_workers=2, shuffle=True)
        for _ in range(3):
            seen = sorted(int(i) for batch in loader for i in batch["id"])
            self.assertEqual(list(range(24)), seen)
        self.assertEqual([1] * 24, data.loads.tolist(), "each sample loaded once in all, across both workers")
        _, held, hits, loads = cached.cache.counts()
        self.assertEqual((24, 48, 24), (held, hits, loads))

    @unittest.skipIf(torch is None, "needs torch")
    def test_a_feeder_refuses_cache_mb_where_it_cannot_keep_samples(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            spawned = tud.DataLoader(_Ids(8), batch_size=4, num_workers=2, multiprocessing_context="spawn")
            with self.assertRaisesRegex(ValueError, "by fork; this loader's multiprocessing_context is 'spawn'"):
                TensorProducer("cachespawn", spawned, cache_mb=8)

            class Stream(tud.IterableDataset):
                def __iter__(self):
                    return iter(range(3))

            with self.assertRaisesRegex(ValueError, "fed by index; this loader reads an IterableDataset"):
                TensorProducer("cachestream", tud.DataLoader(Stream(), batch_size=2), cache_mb=8)
            with self.assertRaisesRegex(ValueError, "exact_epochs=False feeds the loader in its own order"):
                TensorProducer("cacheown", tud.DataLoader(_Ids(8), batch_size=4), cache_mb=8, exact_epochs=False)


@unittest.skipIf(torch is None, "needs torch")
class SharedCacheTest(unittest.TestCase):
    def test_a_share_started_with_cache_mb_loads_each_sample_once_per_sweep(self):
        import sys

        from tensorsocket_client import share
        from tensorsocket_client.directory import launcher_command
        from tensorsocket_client.share import log_path, stop_if_idle
        from tensorsocket_client.synthetic import SyntheticSpec
        if launcher_command() is None:
            self.skipTest("no tensorsocket launcher (build the command line first)")
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "scripts"))
        spec = SyntheticSpec.parse("samples=60,shape=3x4x4,dtype=float32,seed=5")
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, \
                mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            counts = os.path.join(d, "loads.txt")
            loader = share("kept", "share_loaders:kept", batch_size=8, kwargs={"count_file": counts}, linger=60.0,
                           cache_mb=4)
            for _ in range(3):
                ids = []
                for x, label, i in loader:
                    np.testing.assert_array_equal(spec.fill(i.numpy()), x.numpy())
                    np.testing.assert_array_equal(spec.labels(i.numpy()), label.numpy())
                    ids += i.tolist()
                self.assertEqual(list(range(60)), sorted(ids), "an exact epoch")
            loader.dataset.close()
            with open(counts) as f:
                self.assertEqual(list(range(60)), sorted(int(v) for v in f), "each sample loaded once in 3 epochs")
            # the share's log while it runs (a share that ends cleanly takes its log along)
            deadline = time.monotonic() + 30
            log = ""
            while "epoch 1: the decoded" not in log and time.monotonic() < deadline:
                with open(log_path("kept")) as f:
                    log = f.read()
                time.sleep(0.05)
            deadline = time.monotonic() + 30  # its producer notes the trial's goodbye
            while not stop_if_idle("kept") and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertFalse(os.path.exists(os.path.join(d, "kept")), "the share stopped when asked")
        self.assertIn("epoch 0: the decoded-sample cache holds 60 of 60 samples", log)
        self.assertIn("epoch 1: the decoded-sample cache holds 60 of 60 samples", log)


@unittest.skipIf(torch is None, "needs torch")
class CachedContractTest(unittest.TestCase):
    """A late joiner and the ranks of a job read a cached feed with every epoch exact, each sample loaded once."""

    def test_a_late_joiner_and_a_jobs_ranks_get_exact_epochs_from_a_cached_feed(self):
        from tensorsocket_client._status import query
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            self.skipTest("no tensorsocket launcher (build the command line first)")
        data = _Ids(120)
        loader = tud.DataLoader(data, batch_size=8, shuffle=True, num_workers=2, persistent_workers=True)
        got = {}
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, \
                mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            feeder = TensorProducer("kept", loader, epochs=5, seed=3, cache_mb=8, start_grace=0, slots=9)
            fed = threading.Thread(target=feeder.run, daemon=True)
            fed.start()
            midway, joined = threading.Event(), threading.Event()

            def read(key, epochs, **options):
                with TensorConsumer("kept", batch_size=options.pop("batch_size"), connect_timeout=60,
                                    **options) as c:
                    got[key] = ([], c.start_mode)
                    for _ in range(epochs):
                        ids = []
                        for batch in c:
                            ids += [int(i) for i in batch["id"]]
                            if key == "first" and len(ids) >= 40 and not midway.is_set():
                                midway.set()
                                joined.wait(60)  # the others join while this one is mid-epoch
                        got[key][0].append(ids)

            readers = [threading.Thread(target=read, args=("first", 5), kwargs={"batch_size": 8})]
            readers[0].start()
            self.assertTrue(midway.wait(60), "the first consumer did not get 40 samples into its first epoch")
            # The producer fills its 9 slots ahead of the held consumer and stops there, in the middle of an epoch:
            # the others join at a position that cannot move under them.
            deadline = time.monotonic() + 30
            status = query("kept")
            while (status is None or status.slots_in_use < status.slot_count) and time.monotonic() < deadline:
                time.sleep(0.02)
                status = query("kept")
            self.assertTrue(status is not None and 0 < status.sample < 120, status)
            readers += [threading.Thread(target=read, args=("late", 2), kwargs={"batch_size": 5}),
                        threading.Thread(target=read, args=("rank0", 2), kwargs={"batch_size": 4, "job": "j",
                                                                                 "rank": 0, "world_size": 2}),
                        threading.Thread(target=read, args=("rank1", 2), kwargs={"batch_size": 4, "job": "j",
                                                                                 "rank": 1, "world_size": 2})]
            for r in readers[1:]:
                r.start()
            time.sleep(1.0)
            joined.set()
            for r in readers + [fed]:
                r.join(120)
                self.assertFalse(r.is_alive(), "a reader or the feeder did not finish")
        for key in ("first", "late"):
            for ids in got[key][0]:
                self.assertEqual(list(range(120)), sorted(ids), key)
        # it joined mid-epoch, past the rubber band's batches (inside them it would start at the epoch's start)
        self.assertEqual("exact", got["late"][1])
        for e in range(2):
            self.assertEqual(list(range(120)), sorted(got["rank0"][0][e] + got["rank1"][0][e]), "the job's epoch %d" % e)
        self.assertEqual([1] * 120, [int(v) for v in data.loads],
                         "each sample loaded once in all (the probe's sample in the feeder, the rest in its workers)")


@unittest.skipIf(torch is None or torchvision is None, "needs torch and torchvision")
class CachedFeedTest(unittest.TestCase):
    """An ImageFolder of JPEGs with a random augmentation, fed with and without ``cache_mb``: the same bytes reach
    the consumer in every epoch, and after the first epoch nothing is decoded again."""

    EPOCHS = 3

    @classmethod
    def setUpClass(cls):
        cls.images = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(3)
        for c in range(2):
            os.makedirs(os.path.join(cls.images.name, "c%d" % c))
            for i in range(9):
                pixels = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(os.path.join(cls.images.name, "c%d" % c, "%d.jpg" % i), quality=90)

    @classmethod
    def tearDownClass(cls):
        cls.images.cleanup()

    def feed(self, name, cache_mb):
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            self.skipTest("no tensorsocket launcher (build the command line first)")
        import torchvision.transforms as T
        folder = torchvision.datasets.ImageFolder(self.images.name, transform=T.Compose([
            T.RandomResizedCrop(24, scale=(0.3, 1.0)), T.RandomHorizontalFlip(), T.ToTensor()]))
        loader = tud.DataLoader(folder, batch_size=4, shuffle=True, num_workers=2,
                                generator=torch.Generator().manual_seed(11))
        epochs = []
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, \
                mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            feeder = TensorProducer(name, loader, epochs=self.EPOCHS, seed=5, cache_mb=cache_mb, start_grace=0)
            fed = threading.Thread(target=feeder.run, daemon=True)
            fed.start()
            with TensorConsumer(name, batch_size=4, connect_timeout=60) as consumer:
                for _ in range(self.EPOCHS):
                    epochs.append([(batch["data"].tobytes(), batch["label"].tobytes()) for batch in consumer])
            fed.join(60)
            self.assertFalse(fed.is_alive(), "the feeder did not end after its epochs")
        return epochs

    def test_cached_and_uncached_feeds_give_the_same_bytes_and_later_epochs_decode_nothing(self):
        plain = self.feed("uncached", None)
        with self.assertLogs("tensorsocket_client", "INFO") as logs:
            cached = self.feed("cached", 16)
        self.assertEqual(self.EPOCHS, len(cached))
        for e in range(self.EPOCHS):
            self.assertEqual(len(plain[e]), len(cached[e]), "epoch %d" % e)
            self.assertTrue(plain[e] == cached[e], "epoch %d's bytes differ with the cache" % e)
        self.assertNotEqual(plain[0], plain[1], "the augmentation is fresh every epoch")
        lines = [line for line in logs.output if "decoded-sample cache holds" in line]
        self.assertEqual(self.EPOCHS, len(lines), logs.output)
        self.assertIn("epoch 0: the decoded-sample cache holds 18 of 18 samples", lines[0])
        for e in (1, 2):
            self.assertIn("epoch %d: the decoded-sample cache holds 18 of 18 samples" % e, lines[e])
            self.assertTrue(lines[e].endswith("18 hits, 0 loads"), lines[e])


if __name__ == "__main__":
    unittest.main()
