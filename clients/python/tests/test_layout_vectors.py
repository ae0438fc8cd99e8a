"""The shared-memory and Flight layouts the Java suite writes into docs/test-vectors, read by this client:
arena region offsets and slot bytes (arena.Layout), a rings file header (read with the layout the Java
RingLayout documents), and one Flight record tag of each kind (flight._TAG)."""

import os
import struct
import unittest

from tensorsocket_client import arena, flight, rings, wire
from tensorsocket_client.dtypes import DTYPES

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "test-vectors")
_CODE = {name: code for code, (name, _) in DTYPES.items()}


def lines(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if not line.startswith("#")]


class ArenaLayoutTest(unittest.TestCase):
    def test_every_layout_has_the_javas_offsets_and_sizes(self):
        cases = lines("arena-layout.txt")
        self.assertGreaterEqual(len(cases), 4)
        for line in cases:
            with self.subTest(line):
                given, expected = line.split(" -> ")
                batch, slots, specs = given.split(" ")
                tensors = []
                for spec in specs.split(","):
                    name, dtype, shape = spec.split(":")
                    tensors.append(wire.TensorSpec(name, _CODE[dtype], tuple(int(d) for d in shape.split("x") if d)))
                layout = arena.Layout(tuple(tensors), int(batch), int(slots))
                slot_bytes, file_bytes, offsets = expected.split(" ")
                self.assertEqual(int(slot_bytes), layout.slot_bytes)
                self.assertEqual(int(file_bytes), layout.file_bytes)
                self.assertEqual([int(o) for o in offsets.split(",")], layout.region_offsets)


class RingsHeaderTest(unittest.TestCase):
    # The layout of docs/PROTOCOL.md section 4a, as this client's rings module reads it.
    HEADER = rings._HEADER
    FIELDS = {"owner": rings.OWNER, "doorbell": rings.DOORBELL, "tail": rings.TAIL, "cursor": rings.CURSOR,
              "parked": rings.PARKED, "entries": rings.RING_HEADER_BYTES, "entry_bytes": rings.ENTRY_BYTES,
              "file_header": rings.HEADER_BYTES}

    def test_the_header_and_the_ring_fields_are_where_the_java_side_puts_them(self):
        hexline, fields, ring = lines("rings-header.txt")
        head = bytes.fromhex(hexline.replace(" ", ""))
        magic, version, rings_, session, capacity, entry_bytes = self.HEADER.unpack(head)
        self.assertIsNone(rings.header_problem(head, 1 << 20, -77))
        self.assertEqual("it belongs to another producer session", rings.header_problem(head, 1 << 20, 5))
        self.assertEqual("its geometry is invalid", rings.header_problem(head, 100, -77))
        self.assertEqual(b"TSRINGS1", struct.pack("<Q", magic))
        self.assertEqual((1, 3, -77, 64, 64), (version, rings_, session, capacity, entry_bytes))
        self.assertEqual(self.FIELDS, {k: int(v) for k, v in (f.split("=") for f in fields.split(" ")[1:])})
        _, index, offset = ring.split(" ")
        self.assertEqual(int(offset), self.FIELDS["file_header"] + int(index) * (self.FIELDS["entries"]
                                                                                 + capacity * entry_bytes))


class FlightTagTest(unittest.TestCase):
    def test_every_kind_decodes_with_the_consumers_struct(self):
        kinds = {"BATCH": flight.BATCH, "END_OF_EPOCH": flight.END_OF_EPOCH, "END_OF_STREAM": flight.END_OF_STREAM,
                 "HEARTBEAT": flight.HEARTBEAT}
        seen = set()
        for line in lines("flight-tags.txt"):
            kind, epoch, index, start, pos, samples, tag = line.split(" ")
            raw = bytes.fromhex(tag)
            self.assertEqual(flight._TAG.size, len(raw))
            self.assertEqual((flight._MAGIC, kinds[kind], int(epoch), int(index), int(start), int(pos), int(samples)),
                             flight._TAG.unpack(raw))
            seen.add(kind)
        self.assertEqual(set(kinds), seen)


if __name__ == "__main__":
    unittest.main()
