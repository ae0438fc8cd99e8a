"""The consumer's end of a descriptor ring (tensorsocket_client.rings) on a rings file written here the way the
Java producer's DescriptorRings.Writer writes one: entries in order across the ring's wrap, the cursor it
reports, a ring given to another consumer, a broken tail, and a sleeper woken through the futex by another
process's store and wake."""

import multiprocessing
import os
import struct
import tempfile
import threading
import time
import unittest

from tensorsocket_client import rings, wire
from tensorsocket_client.errors import ProtocolError

SESSION = 0x1234


def write_file(path, count=2, capacity=8):
    with open(path, "wb") as f:
        f.write(rings._HEADER.pack(rings.MAGIC, rings.VERSION, count, SESSION, capacity, rings.ENTRY_BYTES).ljust(64, b"\0"))
        f.write(b"\0" * count * (rings.RING_HEADER_BYTES + capacity * rings.ENTRY_BYTES))


class Writer:
    """The producer's end, as DescriptorRings.Writer: claim, then entry, tail, doorbell + 1, wake if parked."""

    def __init__(self, path, index, capacity=8):
        self.f = open(path, "r+b")
        self.capacity = capacity
        self.base = rings.HEADER_BYTES + index * (rings.RING_HEADER_BYTES + capacity * rings.ENTRY_BYTES)
        self.tail = 0

    def word(self, at, fmt, value=None):
        self.f.seek(self.base + at)
        if value is None:
            return struct.unpack(fmt, self.f.read(struct.calcsize(fmt)))[0]
        self.f.write(struct.pack(fmt, value))
        self.f.flush()

    def claim(self, owner):
        self.tail = 0
        self.word(rings.OWNER, "<i", owner)
        self.word(rings.TAIL, "<q", 0)
        self.word(rings.CURSOR, "<q", owner << 32)

    def publish(self, m):
        frame = wire.encode(m).ljust(rings.ENTRY_BYTES, b"\0")
        self.f.seek(self.base + rings.RING_HEADER_BYTES + (self.tail % self.capacity) * rings.ENTRY_BYTES)
        self.f.write(frame)
        self.f.flush()
        self.tail += 1
        self.word(rings.TAIL, "<q", self.tail)
        self.word(rings.DOORBELL, "<i", self.word(rings.DOORBELL, "<i") + 1)

    def close(self):
        self.f.close()


def _publish_later(path, delay):
    time.sleep(delay)
    w = Writer(path, 1)
    w.tail = 0
    w.publish(wire.EpochEnd(0, 1, 5))
    reader_side = rings.RingReader(path, SESSION, 1, 9)  # for the doorbell's address in this process
    rings.futex_wake(reader_side._doorbell_at)
    reader_side.close()
    w.close()


class RingReaderTest(unittest.TestCase):
    def setUp(self):
        if not rings.supported():
            self.skipTest("no futexes on this platform")
        self.tmp = tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.path = os.path.join(self.tmp.name, "rings")
        write_file(self.path)

    def tearDown(self):
        self.tmp.cleanup()

    def test_entries_come_in_order_across_the_wrap_and_the_cursor_says_how_far_tagged_with_the_owner(self):
        w = Writer(self.path, 1)
        w.claim(7)
        r = rings.RingReader(self.path, SESSION, 1, 7)
        try:
            self.assertIsNone(r.poll())
            for k in range(20):  # more than the 8 entries of the ring: it wraps
                w.publish(wire.EpochEnd(k, k, k * 10))
                self.assertTrue(r.ready())
                entry = r.poll()
                self.assertEqual(rings.ENTRY_BYTES, len(entry))
                version, mtype, length = wire.decode_header(entry[:wire.HEADER_BYTES])
                self.assertEqual(wire.EpochEnd(k, k, k * 10), wire.decode_payload(mtype, entry[wire.HEADER_BYTES:][:length]))
                self.assertEqual(7 << 32 | (k + 1), w.word(rings.CURSOR, "<q"))
            self.assertFalse(r.ready())
            w.publish(wire.EndOfStream(0))
            self.assertEqual(1, len(r.unread()), "unread looks without taking")
            self.assertIsNotNone(r.poll())
        finally:
            r.close()
            w.close()

    def test_a_ring_given_to_another_consumer_is_not_read_any_further(self):
        w = Writer(self.path, 0)
        w.claim(3)
        r = rings.RingReader(self.path, SESSION, 0, 3)
        try:
            w.publish(wire.EpochEnd(0, 1, 1))
            w.claim(4)
            w.publish(wire.EpochEnd(0, 2, 2))
            with self.assertRaises(rings.RingTaken) as e:
                r.poll()
            self.assertIn("now serves consumer 4", str(e.exception))
        finally:
            r.close()
            w.close()

    def test_a_tail_beyond_the_capacity_is_the_producer_breaking_the_protocol(self):
        w = Writer(self.path, 0)
        w.claim(3)
        w.word(rings.TAIL, "<q", 100)
        r = rings.RingReader(self.path, SESSION, 0, 3)
        try:
            with self.assertRaises(ProtocolError) as e:
                r.poll()
            self.assertIn("more than its 8", str(e.exception))
        finally:
            r.close()
            w.close()

    def test_an_entry_that_is_no_stream_event_is_the_producer_breaking_the_protocol(self):
        from tensorsocket_client.link import _decode_entry
        self.assertEqual(wire.EpochEnd(1, 2, 3), _decode_entry(wire.encode(wire.EpochEnd(1, 2, 3)).ljust(64, b"\0")))
        with self.assertRaises(ProtocolError) as e:
            _decode_entry(wire.encode(wire.Heartbeat()).ljust(64, b"\0"))
        self.assertIn("holds Heartbeat, which only the socket carries", str(e.exception))
        with self.assertRaises(ProtocolError) as e:
            frame = bytearray(wire.encode(wire.EpochEnd(1, 2, 3)))
            magic, version, mtype, reserved, length = wire._HEADER.unpack_from(frame)
            wire._HEADER.pack_into(frame, 0, magic, version, mtype, reserved, 60)  # more than the entry holds
            _decode_entry(bytes(frame).ljust(64, b"\0"))
        self.assertIn("is not a frame this consumer reads", str(e.exception))

    def test_a_file_of_another_session_or_a_ring_outside_it_is_refused(self):
        with self.assertRaises(ProtocolError) as e:
            rings.RingReader(self.path, SESSION + 1, 0, 1)
        self.assertIn("another producer session", str(e.exception))
        with self.assertRaises(ProtocolError) as e:
            rings.RingReader(self.path, SESSION, 2, 1)
        self.assertIn("ring 2 outside the 2 rings", str(e.exception))

    def test_a_sleeper_times_out_within_its_bound_and_a_knock_from_another_thread_wakes_it(self):
        r = rings.RingReader(self.path, SESSION, 1, 9)
        try:
            t0 = time.monotonic()
            r.park(r.doorbell(), 0.05)
            self.assertLess(time.monotonic() - t0, 1.0)
            seen = r.doorbell()
            threading.Timer(0.05, r.knock).start()
            t0 = time.monotonic()
            r.park(seen, 5.0)  # capped at PARK_S: a lost wake-up costs that much, never a hang
            self.assertLess(time.monotonic() - t0, rings.PARK_S + 0.5)
            deadline = time.monotonic() + 5
            while r.doorbell() == seen and time.monotonic() < deadline:
                r.park(seen, 1.0)
            self.assertNotEqual(seen, r.doorbell())
        finally:
            r.close()

    def test_another_process_publishing_and_waking_ends_the_sleep_with_the_entry_there(self):
        r = rings.RingReader(self.path, SESSION, 1, 9)
        Writer(self.path, 1).claim(9)
        try:
            p = multiprocessing.get_context("fork").Process(target=_publish_later, args=(self.path, 0.3))
            p.start()
            deadline = time.monotonic() + 10
            while not r.ready() and time.monotonic() < deadline:
                r.park(r.doorbell(), 1.0)
            p.join(10)
            self.assertIsNotNone(r.poll())
        finally:
            r.close()


if __name__ == "__main__":
    unittest.main()


class HandoffOptionsTest(unittest.TestCase):
    """A consumer's hand-off options are checked before it connects, with what to give instead."""

    def test_an_unknown_handoff_or_a_spin_out_of_range_is_refused(self):
        from tensorsocket_client import TensorConsumer
        with self.assertRaises(ValueError) as e:
            TensorConsumer("x", batch_size=8, handoff="pipe")
        self.assertIn("handoff='pipe': use 'ring' or 'socket'", str(e.exception))
        with self.assertRaises(ValueError) as e:
            TensorConsumer("x", batch_size=8, spin=2)
        self.assertIn("spin=2 s: use 0 to 1 seconds", str(e.exception))
