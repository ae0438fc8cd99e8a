"""A Python benchmark consumer, the twin of the bench module's BenchConsumer, which ``tensorsocket bench`` starts
beside the Java one: iterates epochs, reads nothing of each batch but its publication stamp, records the
publish-to-hold latency of each batch after a warm-up, and prints one line of results.

    python3 clients/python/examples/bench_consumer.py DIR BATCH EPOCHS WARMUP SPIN_US ring|socket

RESULT batches=N seconds=S batches_per_s=R gb_per_s=0 p50_us=P p99_us=Q (the stamp is the producer's
System.nanoTime() at publication, CLOCK_MONOTONIC as time.monotonic_ns() here).
"""

import sys
import time

from tensorsocket_client import TensorConsumer

STAMP = "published_ns"


def main():
    d, batch, epochs, warmup, spin_us, handoff = sys.argv[1:7]
    batch, epochs, warmup = int(batch), int(epochs), int(warmup)
    latencies = []
    seen = 0
    start = last = 0
    with TensorConsumer(directory=d, batch_size=batch, connect_timeout=30, handoff=handoff,
                        spin=float(spin_us) / 1e6) as c:
        if c.handoff != handoff:
            raise SystemExit("asked for the %s hand-off, got %s" % (handoff, c.handoff))
        for _ in range(epochs):
            for b in c:
                held = time.monotonic_ns()
                last = held
                if seen == warmup:
                    start = held
                if seen >= warmup:
                    latencies.append(held - int(b[STAMP][0]))
                seen += 1
    n = len(latencies)
    latencies.sort()
    seconds = (last - start) / 1e9
    print("RESULT batches=%d seconds=%.4f batches_per_s=%.2f gb_per_s=0 p50_us=%.1f p99_us=%.1f"
          % (n, seconds, (n - 1) / seconds if seconds > 0 else 0, latencies[n // 2] / 1e3,
             latencies[min(n - 1, int(n * 0.99))] / 1e3), flush=True)


if __name__ == "__main__":
    main()
