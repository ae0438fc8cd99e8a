package io.tensorsocket.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * An experiment beside {@link Harness#handoff}: the same hand-off (producer in this JVM paced at one
 * batch per millisecond, one consumer JVM, {@link Harness#HANDOFF_WARMUP} batches of warm-up), but the
 * batch descriptor travels through a ring in shared memory and a sleeping consumer is woken by a futex
 * on that memory instead of by a Unix-domain socket. It measures the wake-up path only: no arena, no
 * payload, no protocol; the consumer counts a batch as held once it has read the descriptor.
 *
 * <h2>The mapping (one small file in /dev/shm, mapped shared by both processes, pre-touched)</h2>
 * <pre>
 *  offset 0        4        8        12                        64
 *         +--------+--------+--------+------ ... ------------+
 *         |sequence| parked |attached|       (unused)         |
 *         +--------+--------+--------+------ ... ------------+
 *  64     | descriptor 0: slot (8) | batch (8) | published_ns (8) | pad (8) |   32 bytes each,
 *  96     | descriptor 1                                             |   RING = 64 of them
 *   ...   | descriptor (batch mod RING)                              |
 *         +----------------------------------------------------------+
 *
 *  sequence  int, written by the producer: how many descriptors are published; the futex word
 *  parked    int, written by the consumer: 1 while it is about to sleep or asleep on the futex word
 *  attached  int, written by the consumer once it has mapped the file: the producer starts then
 * </pre>
 * The producer writes descriptor {@code b}, stores {@code sequence = b + 1}, and calls FUTEX_WAKE only
 * when {@code parked} is 1. The consumer polls {@code sequence} for up to its spin time, then stores
 * {@code parked = 1}, reads {@code sequence} once more and, still unchanged, waits on it with FUTEX_WAIT
 * (bounded: 100 ms, so a lost wake-up shows as a timeout rather than a hang) and clears {@code parked}.
 * Both "store then read the other's word" steps are volatile (sequentially consistent): with only
 * release/acquire each side could read the other's old value and the wake would be lost until the
 * timeout. The ring is not flow-controlled (the consumer releases nothing): 64 ms of lag would overwrite
 * a descriptor, which the consumer detects by the batch number and reports as {@code overrun}.
 */
public final class RingHandoff {
    private static final int RING = 64;
    private static final long SEQUENCE = 0;
    private static final long PARKED = 4;
    private static final long ATTACHED = 8;
    private static final long DESCRIPTORS = 64;
    private static final long DESCRIPTOR_BYTES = 32;
    private static final long FILE_BYTES = DESCRIPTORS + RING * DESCRIPTOR_BYTES;
    private static final long PARK_TIMEOUT_NANOS = 100_000_000L;
    private static final long PACE_NANOS = 1_000_000L;
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private RingHandoff() {
    }

    /** Hand-off latencies over the ring, and how often the consumer's futex wait ran into its timeout. */
    public record Result(double p50Us, double p99Us, long batches, long spinMicros, long parks, long timeouts, long overruns) {
    }

    /** As {@link #run(int, long, boolean)} without release traffic. */
    public static Result run(int batches, long spinMicros) throws Exception {
        return run(batches, spinMicros, false);
    }

    /**
     * Publishes {@link Harness#HANDOFF_WARMUP} + {@code batches} descriptors at one per millisecond to a
     * consumer JVM that polls for {@code spinMicros} before it parks on the futex. With {@code releases},
     * the consumer also writes a 16-byte release per batch to a Unix-domain socket that a reader thread of
     * this JVM drains, as the real consumer tells the real producer: it shows what that traffic (a wake-up
     * of the producer's reader per batch, on the same cores) does to the hand-off.
     */
    public static Result run(int batches, long spinMicros, boolean releases) throws Exception {
        if (!System.getProperty("os.arch").equals("amd64") || !System.getProperty("os.name").equals("Linux")) {
            throw new UnsupportedOperationException("the futex ring needs Linux on x86_64 (syscall number 202)");
        }
        int total = Harness.HANDOFF_WARMUP + batches;
        Path file = Files.createTempFile(Path.of("/dev/shm"), "tensorsocket-ring-", ".map");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment map = map(file, arena);
            Futex futex = new Futex(); // linking the downcall takes a while: before the consumer waits for batches
            Path socket = Path.of(file + ".sock");
            ServerSocketChannel server = null;
            Thread reader = null;
            if (releases) {
                server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
                server.bind(UnixDomainSocketAddress.of(socket));
                ServerSocketChannel accepting = server;
                reader = Thread.ofPlatform().daemon().name("ring-release-reader").start(() -> drain(accepting));
            }
            Process consumer = Harness.startJvm(RingHandoff.class, file.toString(), Integer.toString(total),
                    Integer.toString(Harness.HANDOFF_WARMUP), Long.toString(spinMicros), releases ? socket.toString() : "-");
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while ((int) INT.getVolatile(map, ATTACHED) == 0) {
                    if (System.nanoTime() > deadline || !consumer.isAlive()) {
                        throw new IllegalStateException("the ring consumer JVM did not attach within 30 s");
                    }
                    Thread.sleep(1);
                }
                publish(map, futex, total);
                String line = new BufferedReader(new InputStreamReader(consumer.getInputStream(), StandardCharsets.UTF_8))
                        .lines().filter(l -> l.startsWith("RESULT")).findFirst()
                        .orElseThrow(() -> new IllegalStateException("the ring consumer JVM printed no result"));
                Map<String, Double> m = new HashMap<>();
                for (String kv : line.substring(7).split(" ")) {
                    String[] p = kv.split("=");
                    m.put(p[0], Double.parseDouble(p[1]));
                }
                return new Result(m.get("p50_us"), m.get("p99_us"), m.get("batches").longValue(), spinMicros,
                        m.get("parks").longValue(), m.get("timeouts").longValue(), m.get("overruns").longValue());
            } finally {
                if (!consumer.waitFor(1, TimeUnit.MINUTES)) {
                    consumer.destroyForcibly();
                }
                if (server != null) {
                    server.close();
                    reader.join(5_000);
                }
                Files.deleteIfExists(socket);
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** The producer side of the release traffic: one consumer's 16-byte releases, read as they come. */
    private static void drain(ServerSocketChannel server) {
        try (SocketChannel ch = server.accept()) {
            ByteBuffer buf = ByteBuffer.allocateDirect(4096);
            while (ch.read(buf.clear()) >= 0) {
                // the bytes are not needed: the wake-up per release is what is being reproduced
            }
        } catch (IOException e) {
            // the consumer JVM ended or the server closed: the run is over
        }
    }

    private static void publish(MemorySegment map, Futex futex, int total) {
        MemorySegment word = map.asSlice(SEQUENCE, 4);
        for (int b = 0; b < total; b++) {
            LockSupport.parkNanos(PACE_NANOS);
            long d = DESCRIPTORS + (b % RING) * DESCRIPTOR_BYTES;
            map.set(ValueLayout.JAVA_LONG, d, b % 8); // the slot a real producer would name
            map.set(ValueLayout.JAVA_LONG, d + 8, b);
            map.set(ValueLayout.JAVA_LONG, d + 16, System.nanoTime());
            INT.setVolatile(map, SEQUENCE, b + 1); // release of the descriptor, and ordered before reading parked
            if ((int) INT.getVolatile(map, PARKED) != 0) {
                futex.wake(word, 1);
            }
        }
    }

    /**
     * The consumer JVM: file, batches in all, warm-up batches, spin microseconds, release socket or "-";
     * prints one RESULT line.
     */
    public static void main(String[] args) throws IOException {
        Path file = Path.of(args[0]);
        int total = Integer.parseInt(args[1]);
        int warmup = Integer.parseInt(args[2]);
        long spinNanos = Long.parseLong(args[3]) * 1000;
        SocketChannel releases = args[4].equals("-") ? null
                : SocketChannel.open(UnixDomainSocketAddress.of(Path.of(args[4])));
        ByteBuffer release = ByteBuffer.allocateDirect(16);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment map = map(file, arena);
            MemorySegment word = map.asSlice(SEQUENCE, 4);
            Futex futex = new Futex();
            long[] latencies = new long[total - warmup];
            long parks = 0;
            long timeouts = 0;
            long overruns = 0;
            INT.setVolatile(map, ATTACHED, 1);
            for (int b = 0; b < total; b++) {
                int want = b + 1;
                if ((int) INT.getAcquire(map, SEQUENCE) < want) {
                    long until = System.nanoTime() + spinNanos;
                    while ((int) INT.getAcquire(map, SEQUENCE) < want && System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                }
                int seen;
                while ((seen = (int) INT.getAcquire(map, SEQUENCE)) < want) {
                    INT.setVolatile(map, PARKED, 1);
                    seen = (int) INT.getVolatile(map, SEQUENCE);
                    if (seen < want) {
                        parks++;
                        if (futex.await(word, seen, PARK_TIMEOUT_NANOS) == Futex.ETIMEDOUT) {
                            timeouts++;
                        }
                    }
                    INT.setRelease(map, PARKED, 0);
                }
                long d = DESCRIPTORS + (b % RING) * DESCRIPTOR_BYTES;
                long batch = map.get(ValueLayout.JAVA_LONG, d + 8);
                long published = map.get(ValueLayout.JAVA_LONG, d + 16);
                long held = System.nanoTime();
                if (batch != b) {
                    overruns++;
                }
                if (b >= warmup) {
                    latencies[b - warmup] = held - published;
                }
                if (releases != null) {
                    releases.write(release.clear().putLong(0, b)); // after the stamp: as the real consumer, at its next call
                }
            }
            if (releases != null) {
                releases.close();
            }
            Arrays.sort(latencies);
            int n = latencies.length;
            System.out.printf("RESULT batches=%d p50_us=%.1f p99_us=%.1f parks=%d timeouts=%d overruns=%d%n", n,
                    latencies[n / 2] / 1e3, latencies[Math.min(n - 1, (int) (n * 0.99))] / 1e3, parks, timeouts, overruns);
        }
    }

    /** Maps the whole file shared and touches every page, so no first-touch fault lands in a measurement. */
    private static MemorySegment map(Path file, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (ch.size() < FILE_BYTES) {
                ch.write(java.nio.ByteBuffer.allocate(1), FILE_BYTES - 1);
            }
            MemorySegment map = ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES, arena);
            for (long off = 0; off < FILE_BYTES; off += 4096) {
                map.set(ValueLayout.JAVA_BYTE, off, map.get(ValueLayout.JAVA_BYTE, off));
            }
            return map;
        }
    }
}
