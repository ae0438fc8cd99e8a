"""The Flight reader (tensorsocket_client.flight): addresses, and a stream written by a pyarrow Flight server in this
process as docs/PROTOCOL.md section 8 specifies it. The stream tests skip where pyarrow cannot be imported."""

import os
import struct
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tensorsocket_client import TensorConsumer, errors  # noqa: E402
from tensorsocket_client import flight as tsf  # noqa: E402

try:
    import pyarrow as pa
    import pyarrow.flight as fl
except ImportError as e:  # optional dependency
    pa = fl = None
    WHY = "needs pyarrow (the client's optional dependency for grpc:// producers): %s" % e


class AddressTest(unittest.TestCase):
    def test_parses_plain_tls_and_ipv6(self):
        self.assertEqual(tsf.parse_address("grpc://gpu1:8815/imagenet"), (False, "gpu1", 8815, "imagenet"))
        self.assertEqual(tsf.parse_address("grpc+tls://10.0.0.7:1/a"), (True, "10.0.0.7", 1, "a"))
        self.assertEqual(tsf.parse_address("grpc://[::1]:99/n"), (False, "::1", 99, "n"))
        self.assertTrue(tsf.is_remote("GRPC://h:1/n"))
        self.assertFalse(tsf.is_remote("imagenet"))

    def test_refuses_nonsense_with_the_expected_form(self):
        for bad in ("http://h:1/n", "grpc://h/n", "grpc://h:1/", "grpc://h:1/a/b", "grpc://h:1/n?x=1"):
            with self.assertRaises(ValueError) as c:
                tsf.parse_address(bad)
            self.assertIn("grpc://HOST:PORT/NAME", str(c.exception))


def _tag(kind, epoch=0, index=0, sample_start=0, stream_pos=0, samples=0):
    return pa.py_buffer(struct.pack("<iiqqqqq", 0x54534631, kind, epoch, index, sample_start, stream_pos, samples))


class _Server(fl.FlightServerBase if fl else object):
    """Serves 2 epochs of 10 samples, each a 2x3 float32 'data' and an int64 'id' (= stream position)."""

    def __init__(self, heartbeat_only=False):
        super().__init__("grpc://127.0.0.1:0")
        self.heartbeat_only = heartbeat_only
        self.tickets = []
        self.stop = threading.Event()

    def do_get(self, context, ticket):
        self.tickets.append(ticket.ticket.decode())
        data_type = pa.list_(pa.float32(), 6)
        schema = pa.schema([pa.field("data", data_type, False, {"tensorsocket.dtype": "float32",
                                                                "tensorsocket.shape": "2,3"}),
                            pa.field("id", pa.int64(), False, {"tensorsocket.dtype": "int64",
                                                               "tensorsocket.shape": ""})],
                           metadata={"tensorsocket.version": "1", "tensorsocket.samples_per_epoch": "10",
                                     "tensorsocket.batch_size": "4", "tensorsocket.drop_last": "0",
                                     "tensorsocket.producer_batch_size": "5", "tensorsocket.start_mode": "epoch_start",
                                     "tensorsocket.start_epoch": "0", "tensorsocket.start_sample": "0",
                                     "tensorsocket.producer_epochs": "2", "tensorsocket.description": "test"})
        heartbeat_only, stop = self.heartbeat_only, self.stop
        # pyarrow's server API cannot send a message without a record batch, as the Java server does for the
        # tag-only kinds; an empty batch stands in for none (the reader ignores the body of those kinds).
        empty = pa.record_batch([pa.array([], data_type), pa.array([], pa.int64())], schema=schema)

        def messages():
            if heartbeat_only:
                yield empty, _tag(4)
                stop.wait(30)  # then silence: the client must give up on its own
                return
            for epoch in range(2):
                batches = 0
                for start in range(0, 10, 4):
                    n = min(4, 10 - start)
                    pos = epoch * 10 + start
                    ids = np.arange(pos, pos + n, dtype=np.int64)
                    values = np.repeat(ids.astype(np.float32), 6)
                    rb = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array(values), 6), pa.array(ids)],
                                         schema=schema)
                    yield rb, _tag(1, epoch, batches, start, pos, n)
                    batches += 1
                yield empty, _tag(2, epoch, batches, 0, 0, 10)
            yield empty, _tag(3)

        return fl.GeneratorStream(schema, messages())


@unittest.skipIf(fl is None, WHY if fl is None else "")
class StreamTest(unittest.TestCase):
    def test_reads_exact_epochs_as_read_only_views_and_releases_them(self):
        with _Server() as server:
            with TensorConsumer("grpc://127.0.0.1:%d/p" % server.port, batch_size=4) as c:
                self.assertIsInstance(c, tsf.RemoteConsumer)
                self.assertEqual(len(c), 3)
                self.assertEqual(c.tensors, [("data", "float32", (2, 3)), ("id", "int64", ())])
                for epoch in range(2):
                    seen = []
                    for b in c:
                        data, ids = b["data"], b["id"]
                        self.assertEqual(data.shape, (len(b), 2, 3))
                        self.assertFalse(data.flags.writeable)
                        self.assertEqual(c.stream_position(b), ids[0])
                        np.testing.assert_array_equal(data[:, 1, 2], ids.astype(np.float32))
                        seen.extend(ids.tolist())
                        last = b
                    self.assertEqual(seen, list(range(epoch * 10, epoch * 10 + 10)))
                    self.assertEqual(c.epoch, epoch)
                    self.assertTrue(last.released)
                self.assertEqual(list(c), [])
                self.assertTrue(c.is_end_of_stream())
            with self.assertRaises(errors.TensorSocketError) as closed:  # as a closed local consumer says
                iter(c)
            self.assertIn("is closed", str(closed.exception))
            self.assertIn("batch_size=4", server.tickets[0])
            self.assertIn("start=join_now", server.tickets[0])

    def test_asks_the_server_to_wait_for_the_next_epoch_start(self):
        with _Server() as server:
            with TensorConsumer("grpc://127.0.0.1:%d/p" % server.port, batch_size=4, wait_for_epoch_start=True):
                pass
            self.assertIn("start=next_epoch_start", server.tickets[0])

    def test_a_silent_server_is_gone_within_the_silence_timeout(self):
        with _Server(heartbeat_only=True) as server:
            with TensorConsumer("grpc://127.0.0.1:%d/p" % server.port, batch_size=4, silence_timeout=0.5) as c:
                with self.assertRaises(errors.ProducerGone) as e:
                    list(c)
                self.assertIn("went silent", str(e.exception))
            server.stop.set()

    def test_an_absent_server_is_unreachable(self):
        with self.assertRaises(errors.ProducerGone) as e:
            TensorConsumer("grpc://127.0.0.1:1/p", batch_size=4, connect_timeout=2)
        self.assertIn("unreachable", str(e.exception))


if __name__ == "__main__":
    unittest.main()
