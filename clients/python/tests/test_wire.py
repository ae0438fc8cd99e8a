"""The committed frames in docs/test-vectors (the consumer's and the feeder socket's) decode to the expected
messages and re-encode byte for byte. The Java suite (ProtocolVectorsTest) checks the same files from the other
side."""

import dataclasses
import os
import struct
import unittest

from tensorsocket_client import wire
from tensorsocket_client.errors import ProtocolError, ProtocolVersionError

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "test-vectors")

EXPECTED = {
    "hello": wire.Hello(64, True, 4242, "python3 train.py — ü", wire.NEXT_EPOCH_START, True, "ddp-lr0.1", 2, 4,
                         True),
    "welcome": wire.Welcome(-77, 3, 999, "/dev/shm/tensorsocket-u/n/arena", 8, 1 << 20, 64, 50000, 0,
                            wire.START_EXACT, 4, 1024, "synthetic:samples=5",
                            (wire.TensorSpec("image", 8, (3, 224, 224)), wire.TensorSpec("label", 5, ()),
                             wire.TensorSpec("mask", 10, (7,))), 5, wire.START_EXACT),
    "batch": wire.BatchReady(1 << 40, 7, 3, 12, 768, 64),
    "release": wire.Release(42),
    "epoch_end": wire.EpochEnd(2, 782, 50000),
    "end": wire.EndOfStream(10),
    "error": wire.Error(wire.EVICTED, "consumer 3 held batch 9 too long"),
    "bye": wire.Bye(),
    "status_request": wire.StatusRequest(),
    "progress": wire.Progress(3, 123456, 7_000_000_000, 21_000_000_000),
    "heartbeat": wire.Heartbeat(),
    "status": wire.Status(4242, "cifar", "synthetic:samples=5", 1, 64, 50000, 10, 3, 1024, 782, 50048, 12345.5, 16,
                          1 << 20, 9, 2, 2, 90_000_000_000, 2, 1, wire.START_EXACT,
                          wire.CacheStatus(512 << 20, 300 << 20, 500, 600, 1200, 600), (
                              wire.ConsumerStatus(1, 777, "ana", 32, False, wire.START_EPOCH, 3, 151024, 128, 4, 900,
                                                  True, 120000, 4321.25, 5_000_000_000, 25_000_000_000,
                                                  30_000_000_000, "python3 train.py", False),
                              wire.ConsumerStatus(2, 778, "ana", 100, True, wire.START_ROLLING, 3, 151000, 152, 3,
                                                  600, False, 0, 0.0, 0, 0, 1_000_000_000, "flight 10.0.0.2:51000",
                                                  True, "ddp", 3, 4, 0.75, 2, 123456, 160000, True)), 7),
    "feeder_hello": wire.FeederHello(4243, "python3 feed.py", 64, 60000, 0, "mnist via DataLoader",
                                     (wire.TensorSpec("image", 1, (1, 28, 28)), wire.TensorSpec("label", 5, ())),
                                     60001, True, -5, 2, 4 * 2 * 64 * 28 * 28),
    "feeder_welcome": wire.FeederWelcome(4244, "/dev/shm/tensorsocket-u/mnist/arena", 2),
    "claim": wire.Claim(),
    "slot": wire.SlotGrant(17, 4096 + 17 * 65536),
    "publish": wire.Publish(17, 64),
    "feeder_epoch_end": wire.FeederEpochEnd(0, 60000),
    "order": wire.EpochOrder(3, 16000, 16005, (7, 0, 60000, 2, 1 << 20)),
    "order_request": wire.OrderRequest(3),
    "move": wire.Move(2, 12, 2 << 48),
    "moved": wire.Moved(151040),
    "feeder_lane": wire.FeederLaneHello(4243),
    "lane_start": wire.LaneStart(2, "/dev/shm/tensorsocket-u/mnist/lane-2"),
    "lane_stop": wire.LaneStop(2),
    "paused": wire.Paused(),
    "resume": wire.Resume(2300, 416, -4214222208109204676, 1000, 1000, True, (2, 0, 3, 1, 300)),
}


def read_hex(name):
    with open(os.path.join(VECTORS, name + ".hex"), encoding="utf-8") as f:
        return bytes.fromhex("".join(line for line in f.read().splitlines() if not line.startswith("#")).replace(" ", ""))


def decode(frame):
    version, mtype, length = wire.decode_header(frame[:wire.HEADER_BYTES])
    payload = frame[wire.HEADER_BYTES:]
    assert len(payload) == length, (len(payload), length)
    if version != wire.VERSION:
        return wire.check_version(version, mtype, payload)
    return wire.decode_payload(mtype, payload)


class VectorTest(unittest.TestCase):
    def test_one_vector_per_message_type(self):
        names = sorted(f[:-4] for f in os.listdir(VECTORS) if f.endswith(".hex"))
        self.assertEqual(sorted(EXPECTED), names)

    def test_every_vector_decodes_and_reencodes_byte_identically(self):
        for name, expected in EXPECTED.items():
            with self.subTest(name):
                frame = read_hex(name)
                self.assertEqual(expected, decode(frame))
                self.assertEqual(frame, wire.encode(expected))

    def test_every_truncation_is_rejected(self):
        for name in EXPECTED:
            frame = read_hex(name)
            payload = frame[wire.HEADER_BYTES:]
            _, mtype, _ = wire.decode_header(frame[:wire.HEADER_BYTES])
            for cut in range(len(payload)):
                with self.subTest(name, cut=cut):
                    with self.assertRaises(ProtocolError):
                        wire.decode_payload(mtype, payload[:cut])

    def test_trailing_bytes_are_rejected(self):
        frame = read_hex("release")
        with self.assertRaisesRegex(ProtocolError, "trailing"):
            wire.decode_payload(wire.RELEASE, frame[wire.HEADER_BYTES:] + b"\0")

    def test_bad_header_fields_are_rejected(self):
        good = read_hex("bye")
        with self.assertRaisesRegex(ProtocolError, "magic"):
            wire.decode_header(b"XXXX" + good[4:12])
        with self.assertRaisesRegex(ProtocolError, "limit"):
            wire.decode_header(good[:8] + struct.pack("<I", wire.MAX_PAYLOAD + 1))
        with self.assertRaisesRegex(ProtocolError, "unknown message type"):
            wire.decode_header(good[:6] + bytes([wire.HEARTBEAT + 1, 0]) + good[8:12])
        with self.assertRaisesRegex(ProtocolError, "unknown message type"):
            wire.decode_header(good[:7] + bytes([1]) + good[8:12])

    def test_invalid_values_are_rejected(self):
        hello = bytearray(read_hex("hello")[wire.HEADER_BYTES:])
        hello[4] = 2  # dropLast is a bool
        with self.assertRaisesRegex(ProtocolError, "boolean"):
            wire.decode_payload(wire.HELLO, bytes(hello))
        err = struct.pack("<iH", 4, 2) + b"\xff\xfe"
        with self.assertRaisesRegex(ProtocolError, "UTF-8"):
            wire.decode_payload(wire.ERROR, err)
        welcome = wire.encode(EXPECTED["welcome"])
        bad = bytearray(welcome[wire.HEADER_BYTES:])
        bad[-(1 + 4 + 8 + 1 + 1)] = 99  # the last tensor's dtype code (before its rank, one dimension, ring, mid-epoch)
        with self.assertRaisesRegex(ProtocolError, "dtype"):
            wire.decode_payload(wire.WELCOME, bytes(bad))
        bad = bytearray(welcome[wire.HEADER_BYTES:])
        bad[-1] = wire.START_EPOCH  # a mid-epoch start is rolling or exact
        with self.assertRaisesRegex(ProtocolError, "invalid"):
            wire.decode_payload(wire.WELCOME, bytes(bad))

    def test_a_pace_share_outside_0_to_1_is_refused(self):
        status = bytearray(read_hex("status")[wire.HEADER_BYTES:])
        # the last consumer's pace share (its lane, lane samples, stream end and resuming follow, then the seed)
        status[-38:-30] = struct.pack("<d", 1.5)
        with self.assertRaisesRegex(ProtocolError, "pace share of 1.5"):
            wire.decode_payload(wire.STATUS, bytes(status))
        status[-38:-30] = struct.pack("<d", 0.75)
        self.assertEqual(0.75, wire.decode_payload(wire.STATUS, bytes(status)).consumers[-1].pace_share)

    def test_a_cache_holding_more_than_it_can_is_refused(self):
        for bad in (wire.CacheStatus(10, 11, 1, 1, 0, 0), wire.CacheStatus(10, 5, 3, 2, 0, 0)):
            status = dataclasses.replace(EXPECTED["status"], cache=bad)
            with self.assertRaisesRegex(ProtocolError, "STATUS holds a cache holding more than it can"):
                decode(wire.encode(status))

    def test_another_versions_error_is_still_read_and_other_frames_are_refused(self):
        frame = bytearray(read_hex("error"))
        frame[4:6] = struct.pack("<H", wire.VERSION + 1)
        self.assertEqual(EXPECTED["error"], decode(bytes(frame)))
        batch = bytearray(read_hex("batch"))
        batch[4:6] = struct.pack("<H", wire.VERSION + 1)
        with self.assertRaisesRegex(ProtocolVersionError, "version %d" % (wire.VERSION + 1)):
            decode(bytes(batch))

    def test_long_error_messages_are_truncated_and_long_strings_refused(self):
        e = wire.encode(wire.Error(wire.INTERNAL, "x" * 5000))
        self.assertEqual(wire.Error(wire.INTERNAL, "x" * 1024), decode(e))
        with self.assertRaises(ValueError):
            wire.encode(wire.Hello(1, False, 1, "y" * 4097))


if __name__ == "__main__":
    unittest.main()
