"""The allocator thresholds a remote consumer raises: what they are, when they are left alone, and that buffers freed
between batches are then reused instead of faulted in afresh (each case in a process of its own: they are global)."""
import os
import subprocess
import sys
import unittest
from pathlib import Path

CLIENT = str(Path(__file__).resolve().parents[1])

# A thread (its own allocator arena, as gRPC's are) allocates, writes and frees COUNT blocks of MIB MiB, twelve times:
# as gRPC does with the pieces of a stream in flight, or a large message. Prints the pages faulted per MiB written
# after two rounds.
PROBE = r"""
import ctypes, json, resource, sys, threading
from tensorsocket_client import _message_memory
MIB, COUNT = int(sys.argv[1]), int(sys.argv[2])
kept = _message_memory.keep_for(int(sys.argv[3])) if len(sys.argv) > 3 else None
again = _message_memory.keep_for(1000) if kept else None
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
MB = MIB << 20
faults = []
def rounds():
    for r in range(12):
        f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        blocks = [libc.malloc(MB) for _ in range(COUNT)]
        for b in blocks:
            ctypes.memset(b, 1, MB)
        for b in blocks:
            libc.free(b)
        if r >= 2:
            faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0)
t = threading.Thread(target=rounds)
t.start()
t.join()
print(json.dumps({"kept": kept, "again": again, "why_not": _message_memory.why_not(),
                  "pages_per_mib": sum(faults) / (len(faults) * COUNT * MIB)}))
"""


def probe(mib, count, *args, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "TENSORSOCKET_MALLOC_TUNING"}
    full.update(env, PYTHONPATH=CLIENT)
    out = subprocess.run([sys.executable, "-c", PROBE, str(mib), str(count)] + [str(a) for a in args], env=full,
                         capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    import json
    return json.loads(out.stdout)


@unittest.skipUnless(sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION"), "glibc only")
class MessageMemoryTest(unittest.TestCase):
    def test_a_small_batch_raises_the_thresholds_above_grpcs_read_buffers_and_freed_memory_is_reused(self):
        r = probe(1, 24, 786432)
        self.assertEqual([(4 << 20) + (64 << 10), 64 << 20], r["kept"])
        self.assertIsNone(r["again"], "a smaller batch lowered the thresholds")
        self.assertLess(r["pages_per_mib"], 8, r)
        plain = probe(1, 24)
        self.assertIsNone(plain["kept"])
        # the premise: without it, the freed megabytes go back to the kernel and are faulted in again
        self.assertGreater(plain["pages_per_mib"], 128, plain)

    def test_a_batch_larger_than_glibcs_mmap_limit_stops_the_allocator_mapping_blocks_of_its_own(self):
        batch = 38535168  # 64 x 3 x 224 x 224 float32
        r = probe(40, 1, batch)  # one message at a time: a thread's heap holds 64 MiB at most (glibc's rule)
        self.assertEqual([0, 4 * (batch + (64 << 10))], r["kept"])
        self.assertLess(r["pages_per_mib"], 8, r)
        plain = probe(40, 1)
        self.assertGreater(plain["pages_per_mib"], 128, plain)  # mapped afresh and faulted in, every time

    def test_the_users_own_settings_and_the_switch_leave_the_thresholds_alone(self):
        for env, why in (({"MALLOC_TRIM_THRESHOLD_": "1048576"}, "MALLOC_TRIM_THRESHOLD_ is set"),
                         ({"MALLOC_MMAP_THRESHOLD_": "1048576"}, "MALLOC_MMAP_THRESHOLD_ is set"),
                         ({"MALLOC_MMAP_MAX_": "65536"}, "MALLOC_MMAP_MAX_ is set"),
                         ({"TENSORSOCKET_MALLOC_TUNING": "0"}, "TENSORSOCKET_MALLOC_TUNING=0")):
            r = probe(1, 1, 786432, **env)
            self.assertIsNone(r["kept"], env)
            self.assertEqual(why, r["why_not"])

if __name__ == "__main__":
    unittest.main()
