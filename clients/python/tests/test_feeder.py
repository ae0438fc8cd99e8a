import os
import tempfile
import threading
import time
import unittest
from unittest import mock

import numpy as np

from tensorsocket_client import ProducerNotFound, TensorConsumer, TensorProducer
from tensorsocket_client.__main__ import synthetic_epochs
from tensorsocket_client._batch_tensors import _check_carriable, _copy_hint, _dtype_code, _named
from tensorsocket_client.feeder import FeederError, _loader_failure, command_line
from tensorsocket_client.synthetic import SyntheticSpec

try:
    import torch
except ImportError:  # numpy-only installs
    torch = None


def _base(directory):
    """Producers' directories under ``directory`` for the duration of a with block."""
    return mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": directory})


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
        with self.assertRaisesRegex(TypeError, "complex numbers .* cannot carry"):
            _dtype_code(np.zeros(1, np.complex64))


class RefusalTest(unittest.TestCase):
    def test_a_tensor_that_cannot_be_carried_is_refused_by_name_with_what_to_do(self):
        names = np.array(["a.jpg", "b.jpg"])
        with self.assertRaisesRegex(TypeError, r"tensor 'path' of the loader's batch holds strings \(numpy dtype <U5\)"
                                               r".*names=\(\.\.\.\)"):
            _check_carriable([("data", np.zeros((2, 3), np.float32)), ("path", names)])
        with self.assertRaisesRegex(TypeError, "tensor 'meta' .* holds Python objects"):
            _check_carriable([("meta", np.array([{}, {}], dtype=object))])
        with self.assertRaisesRegex(TypeError, "tensor 'n' .* \\(no batch dimension\\)"):
            _check_carriable([("n", np.asarray(3))])
        _check_carriable([("data", np.zeros((2, 3), np.float32)), ("label", np.zeros(2, np.int64))])

    def test_a_loader_failure_names_the_exception_where_it_was_raised_and_the_sample(self):
        class Broken:
            def __getitem__(self, index):
                raise ValueError("cannot decode sample %d" % index)
        try:
            Broken()[417]
        except ValueError as e:
            text = _loader_failure(e, 2, 9)
        self.assertIn("ValueError: cannot decode sample 417", text)
        self.assertIn("in __getitem__, sample index 417", text)
        self.assertIn("batch 9 of epoch 2", text)

    def test_a_worker_failure_keeps_the_original_exception(self):
        e = ValueError("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
                       '  File "/data/ds.py", line 12, in __getitem__\n    raise ValueError("bad 5")\nValueError: bad 5\n')
        text = _loader_failure(e, 0, 3)
        self.assertIn("the loader raised ValueError: bad 5", text)
        self.assertIn('File "/data/ds.py", line 12, in __getitem__', text)

    @unittest.skipIf(torch is None, "needs torch")
    def test_a_worker_dead_of_a_bus_error_is_told_with_the_shared_memory_left_and_what_to_do(self):
        # a worker that cannot map its batch in a full /dev/shm dies of SIGBUS, as in a container's default 64 MiB
        import signal

        from torch.utils.data import DataLoader

        class DiesOfABusError:
            def __len__(self):
                return 4

            def __getitem__(self, index):
                os.kill(os.getpid(), signal.SIGBUS)

        with tempfile.NamedTemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as arena:
            arena.truncate(3 << 20)
            try:
                next(iter(DataLoader(DiesOfABusError(), batch_size=2, num_workers=1)))
                self.fail("the worker died")
            except RuntimeError as e:
                text = _loader_failure(e, 0, 0, arena.name)
        self.assertIn("ran out of shared memory in", text)
        self.assertIn("this producer's arena takes 3 MiB", text)
        self.assertIn("--shm-size", text)
        self.assertEqual("", _loader_failure(ValueError("bad"), 0, 0, arena.name).partition("shared memory")[1])

    def test_producer_options_are_checked_before_anything_starts(self):
        with self.assertRaisesRegex(TypeError, r"unknown options \['rubber_band_pct'\]"):
            TensorProducer("x", [], rubber_band_pct=0.02)
        with self.assertRaisesRegex(ValueError, "stall_timeout=-1 must be positive"):
            TensorProducer("x", [], stall_timeout=-1)
        with self.assertRaisesRegex(ValueError, "arena_mb or slots, not both"):
            TensorProducer("x", [], arena_mb=64, slots=8)
        with self.assertRaisesRegex(ValueError, "invalid producer name"):
            TensorProducer("../x", [])
        with self.assertRaisesRegex(ValueError, "epochs must be a positive integer"):
            TensorProducer("x", [], epochs=0)
        p = TensorProducer("x", [], rubber_band=5, start_grace=0.5, slots=12)
        self.assertEqual(["--rubber-band", "5", "--start-grace-ms", "500", "--slots", "12"], p._serve_args)
        with self.assertRaisesRegex(ValueError, r"flight='8815' is not HOST:PORT"):
            TensorProducer("x", [], flight="8815")
        p = TensorProducer("x", [], flight="0.0.0.0:8815", flight_token_file="/etc/ts-token")
        self.assertEqual(["--flight", "0.0.0.0:8815", "--flight-token-file", "/etc/ts-token"], p._serve_args)

    def test_more_passes_than_declared_epochs_are_refused(self):
        p = TensorProducer("x", [], epochs=1)
        p._epoch = 1
        with self.assertRaisesRegex(FeederError, "all 1 epochs declared"):
            iter(p)


class CommandLineTest(unittest.TestCase):
    def test_whole_arguments_only_with_an_ellipsis_after_the_last_that_fits(self):
        argv = ["train.py", "--lr", "0.001", "--data", "/datasets/imagenet/train"]
        self.assertEqual("train.py --lr 0.001 --data /datasets/imagenet/train", command_line(argv, 200))
        self.assertEqual("train.py --lr 0.001 --data \u2026", command_line(argv, 40))
        for limit in range(1, 60):
            shown = command_line(argv, limit)
            self.assertTrue(all(a in argv + ["python3", "\u2026"] for a in shown.split(" ")), shown)
        self.assertEqual("python3 \u2026", command_line(["/a/very/long/script/path.py"], 10))
        self.assertEqual("python3", command_line([], 10))


class LinkResetTest(unittest.TestCase):
    def test_a_producer_whose_process_ended_with_frames_unread_is_said_so(self):
        import socket

        from tensorsocket_client._feeder_link import FeederLink
        from tensorsocket_client.errors import ProducerFailed
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "feeder.sock")
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(path)
            server.listen(1)
            link = FeederLink(path, 10)
            peer, _ = server.accept()
            link.sock.sendall(b"\x00" * 64)  # frames the producer never reads
            time.sleep(0.05)
            peer.close()  # as a killed producer's kernel closes it: unread data, so the connection is reset
            server.close()
            with self.assertRaisesRegex(ProducerFailed, r"the producer's process ended \(killed or crashed: its end of "
                                                        r"the feeder connection was reset"):
                link.read_any()
            link.close()


class CopyHintTest(unittest.TestCase):
    """A feeder whose batches go through the cache because the C library misjudges its size says how to avoid it."""

    def test_batches_larger_than_the_threshold_are_told_the_setting_that_the_launchers_use(self):
        import tensorsocket_bundle as bundle
        tuning = bundle.copy_tuning({})
        hint = _copy_hint(40_000_000, {})
        if tuning is None:
            self.assertIsNone(hint, "this machine's C library needs no setting")
        else:
            self.assertIn("batches of 40.0 MB", hint)
            self.assertIn("start Python with GLIBC_TUNABLES=" + tuning, hint)
        self.assertIsNone(_copy_hint(1_000_000, {}), "a batch that fits the cache")
        self.assertIsNone(_copy_hint(40_000_000, {"GLIBC_TUNABLES": ""}), "the user's own setting")


class WaitingTest(unittest.TestCase):
    def test_a_consumer_waits_for_a_missing_producer_then_says_what_it_waited_for(self):
        with tempfile.TemporaryDirectory() as d, _base(d):
            started = time.monotonic()
            with self.assertRaisesRegex(ProducerNotFound, r"no producer named 'absent' appeared within 1 s .*"
                                                          r"TensorProducer\('absent', loader\)"):
                TensorConsumer("absent", batch_size=4, connect_timeout=1.0)
            self.assertGreaterEqual(time.monotonic() - started, 0.9)


class ForeignArenaTest(unittest.TestCase):
    def test_a_welcome_naming_a_file_that_is_no_arena_is_refused_saying_so(self):
        import socket
        import threading

        from tensorsocket_client import ProtocolError, wire
        with tempfile.TemporaryDirectory() as d, _base(d):
            os.makedirs(os.path.join(d, "foreign"))
            not_an_arena = os.path.join(d, "foreign", "arena")
            with open(not_an_arena, "wb") as f:
                f.write(b"\x07" * 65536)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(os.path.join(d, "foreign", "feeder.sock"))
            server.listen(1)

            def answer():  # a producer that welcomes the feeder to a file that is not an arena
                conn, _ = server.accept()
                with conn:
                    header = conn.recv(wire.HEADER_BYTES, socket.MSG_WAITALL)
                    _, _, length = wire.decode_header(header)
                    conn.recv(length, socket.MSG_WAITALL)
                    conn.sendall(wire.encode(wire.FeederWelcome(os.getpid(), not_an_arena, 2)))
                    conn.recv(1)  # until the feeder closes

            t = threading.Thread(target=answer, daemon=True)
            t.start()
            p = TensorProducer("foreign", [np.zeros((4, 3), np.float32)], epochs=1, samples_per_epoch=4,
                               start_producer=False, connect_timeout=5.0)
            with self.assertRaisesRegex(ProtocolError, "%s is not a TensorSocket arena" % not_an_arena):
                p.run()
            server.close()
            t.join(5)
            self.assertFalse(t.is_alive(), "the feeder did not close its connection")


class SyntheticFeedTest(unittest.TestCase):
    def test_the_fed_batches_are_the_generators_epoch_in_its_order(self):
        spec = SyntheticSpec.parse("samples=103,shape=2x3,dtype=int16,seed=9")
        batches = list(synthetic_epochs(spec, 25)(1))
        self.assertEqual([25, 25, 25, 25, 3], [len(b["id"]) for b in batches])
        ids = np.concatenate([b["id"] for b in batches])
        np.testing.assert_array_equal(spec.order(1), ids)
        np.testing.assert_array_equal(spec.fill(ids[:25]), batches[0]["data"])
        np.testing.assert_array_equal(spec.labels(ids[:25]), batches[0]["label"])


@unittest.skipIf(torch is None, "needs torch")
class MapStyleTest(unittest.TestCase):
    """Which loaders are fed by index, and what the feeder then loads."""

    class Ids(torch.utils.data.Dataset if torch is not None else object):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return {"x": torch.full((2,), float(i)), "id": i}

    def test_a_plain_dataloader_over_a_map_style_dataset_is_fed_by_index(self):
        from tensorsocket_client._map_style import MapStyle
        dl = torch.utils.data.DataLoader(self.Ids(), batch_size=4, shuffle=True, drop_last=True)
        m = MapStyle.of(dl, None, seed=3)
        self.assertIsNotNone(m)
        self.assertEqual((10, 4, True, True, 3, 8), (m.size, m.batch_size, m.shuffle, m.drop_last, m.seed,
                                                      m.samples_per_epoch()))
        self.assertEqual([0, 1, 2, 3], m.probe()["id"].tolist())
        got = [b["id"].tolist() for b in m.loader([9, 2, 5, 0, 7, 1, 3, 8])]
        self.assertEqual([[9, 2, 5, 0], [7, 1, 3, 8]], got, "the producer's order, in the loader's batches")
        again = [b["id"].tolist() for b in m.loader([1, 2, 3, 4, 5, 6, 7, 8])]
        self.assertEqual([[1, 2, 3, 4], [5, 6, 7, 8]], again, "the next epoch's order, through the same loader")
        self.assertIs(m.loader([0]), m.loader([1]), "one DataLoader for the whole feed")
        self.assertIsNone(MapStyle.of(dl, False, None), "exact_epochs=False keeps the loader's order")

    def test_a_loader_that_cannot_be_fed_by_index_keeps_its_order_or_is_refused_saying_why(self):
        from tensorsocket_client._map_style import MapStyle

        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(3))

        ds = self.Ids()
        cases = {
            "IterableDataset": torch.utils.data.DataLoader(Stream(), batch_size=2),
            "sampler of its own": torch.utils.data.DataLoader(ds, batch_size=2, sampler=[3, 1, 2]),
            "batch_size=None": torch.utils.data.DataLoader(ds, batch_size=None),
            "not a torch DataLoader": [np.zeros((2, 3))],
            "replacement": torch.utils.data.DataLoader(
                ds, batch_size=2, sampler=torch.utils.data.RandomSampler(ds, replacement=True)),
        }
        for why, loader in cases.items():
            with self.subTest(why):
                self.assertIsNone(MapStyle.of(loader, None, None))
                with self.assertRaisesRegex(ValueError, why):
                    MapStyle.of(loader, True, None)

    def test_the_feeder_foresees_epoch_0s_order_as_the_producer_draws_it(self):
        from tensorsocket_client import stream
        from tensorsocket_client._map_style import FORESEEN_AT_MOST, MapStyle
        shuffled = MapStyle.of(torch.utils.data.DataLoader(self.Ids(), batch_size=4, shuffle=True, drop_last=True),
                               None, seed=3)
        self.assertEqual(stream.chunked_first(10, stream.epoch_random(3, 0))[:8], shuffled.first_order())
        in_order = MapStyle.of(torch.utils.data.DataLoader(self.Ids(), batch_size=4), None, seed=3)
        self.assertEqual(list(range(10)), in_order.first_order())
        self.assertEqual([0], in_order.probe(1)["id"].tolist(), "one sample, collated as a batch of one")
        own_collate = torch.utils.data.DataLoader(self.Ids(), batch_size=4, collate_fn=lambda b: b)
        self.assertIsNone(MapStyle.of(own_collate, None, 3).first_order(), "its batches need a whole batch's probe")

        class Large(self.Ids):
            def __len__(self):
                return FORESEEN_AT_MOST + 1

        self.assertIsNone(MapStyle.of(torch.utils.data.DataLoader(Large(), batch_size=4), None, 3).first_order())


class _Numbered(torch.utils.data.Dataset if torch is not None else object):
    """Samples that say their index."""

    def __len__(self):
        return 40

    def __getitem__(self, i):
        return {"id": i, "x": torch.full((3,), float(i))}


@unittest.skipIf(torch is None, "needs torch")
class ForeseenOrderFeedTest(unittest.TestCase):
    """A feeder starts loading epoch 0 in the order it foresees; what the consumers get is the producer's order,
    also where the foreseen one differed (as it would if the two sides' rules drifted apart)."""

    def feed_one_epoch(self, name, foresee=None):
        from tensorsocket_client import stream
        from tensorsocket_client._map_style import MapStyle
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            self.skipTest("no tensorsocket launcher (build the command line first)")
        loader = torch.utils.data.DataLoader(_Numbered(), batch_size=8, shuffle=True)
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, _base(d):
            with mock.patch.object(MapStyle, "first_order", foresee or MapStyle.first_order):
                feeder = TensorProducer(name, loader, epochs=1, seed=21, start_grace=0)
                fed = threading.Thread(target=feeder.run, daemon=True)
                fed.start()
                consumer = TensorConsumer(name, batch_size=8, connect_timeout=60)
                got = [int(i) for batch in consumer for i in batch["id"]]
                consumer.close()
                fed.join(60)
                self.assertFalse(fed.is_alive(), "the feeder did not end after its one epoch")
        self.assertEqual(stream.chunked_first(40, stream.epoch_random(21, 0)), got, "the producer's order, exactly")

    def test_the_foreseen_order_is_the_producers(self):
        with self.assertNoLogs("tensorsocket_client", "WARNING"):
            self.feed_one_epoch("foreseen")

    def test_a_foreseen_order_that_differs_is_loaded_again_in_the_producers(self):
        with self.assertLogs("tensorsocket_client", "WARNING") as logs:
            self.feed_one_epoch("misforeseen", foresee=lambda ms: list(range(ms.size))[::-1])
        self.assertIn("drew another order for epoch 0 than this feeder foresaw", "\n".join(logs.output))


class FeederProducerJitTest(unittest.TestCase):
    """The producer a feeder starts compiles with C1 only, before the user's own JVM options, which win; one that also
    serves over Flight keeps the JVM's default."""

    def test_the_rule(self):
        from tensorsocket_client._producer_process import producer_environment
        env = producer_environment(["--slots", "4"], {"HOME": "/h"})
        self.assertEqual("-XX:TieredStopAtLevel=1", env["TENSORSOCKET_JAVA_OPTS"])
        self.assertEqual("/h", env["HOME"])
        env = producer_environment([], {"TENSORSOCKET_JAVA_OPTS": "-Xmx2g -XX:TieredStopAtLevel=4"})
        self.assertEqual("-XX:TieredStopAtLevel=1 -Xmx2g -XX:TieredStopAtLevel=4", env["TENSORSOCKET_JAVA_OPTS"])
        env = producer_environment(["--flight", "127.0.0.1:8815"], {"TENSORSOCKET_JAVA_OPTS": "-Xmx2g"})
        self.assertEqual("-Xmx2g", env["TENSORSOCKET_JAVA_OPTS"])
        self.assertNotIn("TENSORSOCKET_JAVA_OPTS", producer_environment(["--flight", "h:1"], {}))

    def test_the_started_producers_jvm_runs_with_it(self):
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            self.skipTest("no tensorsocket launcher (build the command line first)")
        batches = [np.full((4, 2), i, np.float32) for i in range(6)]
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, _base(d):
            feeder = TensorProducer("jit", batches, epochs=1, samples_per_epoch=24, start_grace=0)
            fed = threading.Thread(target=feeder.run, daemon=True)
            fed.start()
            consumer = TensorConsumer("jit", batch_size=4, connect_timeout=60)
            got = [float(b[0][0][0]) for b in consumer]
            with open("/proc/%d/cmdline" % feeder.producer_pid, "rb") as f:
                cmdline = f.read().split(b"\0")
            consumer.close()
            fed.join(60)
        self.assertEqual([float(i) for i in range(6)], got)
        self.assertIn(b"-XX:TieredStopAtLevel=1", cmdline)


if __name__ == "__main__":
    unittest.main()
