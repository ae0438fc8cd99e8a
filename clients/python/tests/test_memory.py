"""FileMapping, the mapping behind every array a consumer hands out and every slot a feeder writes: placed so
that the arena's 2 MiB pages are mapped whole, the file's bytes exactly, read-only unless asked, and unmapped on
close. Runs on a file in /dev/shm (skipped where there is none); the 2 MiB-page case also needs Linux 6.1's
MADV_COLLAPSE (skipped, saying so, where the kernel refuses it)."""

import ctypes
import os
import tempfile
import unittest

import numpy as np

from tensorsocket_client._memory import HUGE_PAGE, FileMapping, SlotMap, _libc

SHM = "/dev/shm"
PAGE = 4096
MADV_COLLAPSE = 25


def pmd_mapped_kb(address, length):
    """Kilobytes of [address, address + length) that this process maps through 2 MiB entries."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo < address + length and address < hi
            elif inside and head in ("ShmemPmdMapped:", "FilePmdMapped:"):
                total += int(line.split()[1])
    return total


def mapped(path):
    with open("/proc/self/maps") as f:
        return any(line.rstrip().endswith(path) for line in f)


@unittest.skipUnless(os.path.isdir(SHM), "no /dev/shm here")
class FileMappingTest(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(dir=SHM, prefix="tensorsocket-mapping-")
        self.size = 6 * HUGE_PAGE + 3 * PAGE
        self.content = np.random.default_rng(5).integers(0, 256, self.size, dtype=np.uint8)
        os.write(fd, self.content.tobytes())
        self.fd = fd

    def tearDown(self):
        os.close(self.fd)
        os.unlink(self.path)

    def test_a_mapping_lies_congruent_to_its_offset_and_holds_the_files_bytes(self):
        for offset in (0, PAGE, HUGE_PAGE + 5 * PAGE, 3 * HUGE_PAGE):
            m = FileMapping(self.fd, self.size - offset, offset)
            try:
                self.assertEqual(offset % HUGE_PAGE, m.address() % HUGE_PAGE, "offset %d" % offset)
                b = m.bytes()
                self.assertFalse(b.flags.writeable)
                self.assertTrue(np.array_equal(self.content[offset:], b), "offset %d" % offset)
                del b
            finally:
                m.close()
            self.assertFalse(mapped(self.path), "closed, the file is no longer mapped (offset %d)" % offset)

    def test_a_file_that_cannot_be_mapped_is_an_error_naming_the_offset_and_leaves_nothing_mapped(self):
        reservation = 3 * PAGE + HUGE_PAGE  # of a size nothing else here maps

        def reservations():
            with open("/proc/self/maps") as f:
                spans = (line.split()[0].split("-") for line in f)
                return sum(1 for lo, hi in spans if int(hi, 16) - int(lo, 16) == reservation)
        before = reservations()
        with self.assertRaises(OSError) as e:
            FileMapping(-1, 3 * PAGE, PAGE)
        self.assertEqual(9, e.exception.errno)  # EBADF
        self.assertIn("could not map 12288 bytes of the arena at offset 4096", str(e.exception))
        self.assertEqual(before, reservations(), "the address reservation was given back")

    def test_a_writable_mapping_writes_the_file(self):
        m = FileMapping(self.fd, self.size, 0, writable=True)
        b = m.bytes()
        b[HUGE_PAGE + 7] = 0xA5
        del b
        m.close()
        self.assertEqual(b"\xa5", os.pread(self.fd, 1, HUGE_PAGE + 7))

    def test_a_held_slot_detached_keeps_its_bytes_when_the_file_changes(self):
        offset = PAGE
        sm = SlotMap(self.fd, offset, 2 * HUGE_PAGE)
        view = sm.view(np.uint8, 2 * HUGE_PAGE, 0, (2 * HUGE_PAGE,))
        self.assertTrue(sm.in_use())
        sm.detach()
        os.pwrite(self.fd, bytes(2 * HUGE_PAGE), offset)
        self.assertTrue(np.array_equal(self.content[offset:offset + 2 * HUGE_PAGE], view))
        del view
        self.assertFalse(sm.in_use())
        sm.close()
        self.assertFalse(mapped(self.path))

    def test_an_arena_in_two_mib_pages_is_read_through_two_mib_entries(self):
        writer = FileMapping(self.fd, self.size, 0, writable=True)
        try:
            _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            if _libc.madvise(writer.address(), 6 * HUGE_PAGE, MADV_COLLAPSE) != 0:
                self.skipTest("this kernel keeps 4 KiB pages here (MADV_COLLAPSE: errno %d)" % ctypes.get_errno())
            # a slot that starts one page into the file, as the arena's first slot does: its four whole
            # 2 MiB pages in the middle are mapped whole, its partial first and last ones are not
            slot = FileMapping(self.fd, 5 * HUGE_PAGE, PAGE)
            try:
                self.assertEqual(4 * 2048, pmd_mapped_kb(slot.address(), 5 * HUGE_PAGE))
                self.assertTrue(np.array_equal(self.content[PAGE:PAGE + 5 * HUGE_PAGE], slot.bytes()))
            finally:
                slot.close()
        finally:
            writer.close()


if __name__ == "__main__":
    unittest.main()
