package io.tensorsocket.rings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.ProtocolException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The descriptor rings on their own: entries written by the producer's end arrive at the consumer's end in
 * order and unchanged, a full ring refuses more, a ring given to another consumer stops its old reader, and
 * a reader asleep on the doorbell is woken for every entry (the producer and consumer in other processes
 * are the process tests' business).
 */
class DescriptorRingsTest {
    private static final long SESSION = 0x5eed;

    @TempDir
    Path dir;

    @BeforeEach
    void futexes() {
        Assumptions.assumeTrue(Futex.supported(), "futexes are used on Linux x86_64 and aarch64 only");
    }

    private static void write(DescriptorRings.Writer w, long k) {
        ByteBuffer f = w.frame();
        f.putLong(k).putLong(~k).putInt((int) k);
    }

    private static long read(ByteBuffer f) {
        long k = f.getLong(0);
        assertEquals(~k, f.getLong(8), "entry " + k + " arrived changed");
        assertEquals((int) k, f.getInt(16));
        assertEquals(0, f.get(DescriptorRings.ENTRY_BYTES - 1), "entry " + k + " is not zero-padded");
        return k;
    }

    @Test
    void entriesArriveInOrderAcrossManyWrapsAndAFullRingRefusesMore() throws Exception {
        try (DescriptorRings producer = DescriptorRings.create(dir.resolve("rings"), 3, 8, SESSION);
                DescriptorRings consumer = DescriptorRings.open(dir.resolve("rings"), SESSION)) {
            assertEquals(32, producer.capacity()); // ≥ 2 × 8 + 2, a power of two
            Futex futex = new Futex();
            DescriptorRings.Writer w = producer.writer(2);
            w.claim(7);
            DescriptorRings.Reader r = consumer.reader(2, 7);
            long next = 0;
            for (int round = 0; round < 10 * 32; round++) {
                int burst = 1 + round % 32;
                for (int i = 0; i < burst; i++) {
                    write(w, next + i);
                    assertTrue(w.publish(futex));
                }
                for (int i = 0; i < burst; i++) {
                    assertTrue(r.ready());
                    assertEquals(next++, read(r.poll()));
                }
                assertFalse(r.ready());
                assertNull(r.poll());
            }
            for (int i = 0; i < 32; i++) {
                write(w, i);
                assertTrue(w.publish(futex));
            }
            write(w, 99);
            assertFalse(w.publish(futex), "a full ring took an entry over one its consumer has not read");
            assertEquals(0, read(r.poll()));
            write(w, 32);
            assertTrue(w.publish(futex), "one read entry makes room for one more");
        }
    }

    @Test
    void aRingGivenToAnotherConsumerStopsItsOldReader() throws Exception {
        try (DescriptorRings producer = DescriptorRings.create(dir.resolve("rings"), 1, 4, SESSION);
                DescriptorRings consumer = DescriptorRings.open(dir.resolve("rings"), SESSION)) {
            Futex futex = new Futex();
            DescriptorRings.Writer w = producer.writer(0);
            w.claim(1);
            DescriptorRings.Reader evicted = consumer.reader(0, 1);
            write(w, 10);
            w.publish(futex);
            write(w, 11);
            w.publish(futex);
            assertEquals(10, read(evicted.poll()));
            w.claim(2); // consumer 1 was let go; consumer 2 gets its ring
            write(w, 20);
            w.publish(futex);
            DescriptorRings.RingTakenException e =
                    assertThrows(DescriptorRings.RingTakenException.class, evicted::poll);
            assertTrue(e.getMessage().contains("consumer 2"), e.getMessage());
            assertEquals(20, read(consumer.reader(0, 2).poll()));
        }
    }

    @Test
    void anotherSessionsFileAndAnUnknownRingAreRefused() throws Exception {
        try (DescriptorRings producer = DescriptorRings.create(dir.resolve("rings"), 2, 4, SESSION)) {
            ProtocolException e =
                    assertThrows(ProtocolException.class, () -> DescriptorRings.open(dir.resolve("rings"), 1));
            assertTrue(e.getMessage().contains("another producer session"), e.getMessage());
            assertThrows(ProtocolException.class, () -> producer.reader(2, 1));
        }
        Files.write(dir.resolve("junk"), new byte[4096]);
        ProtocolException e =
                assertThrows(ProtocolException.class, () -> DescriptorRings.open(dir.resolve("junk"), SESSION));
        assertTrue(e.getMessage().contains("not a TensorSocket rings file"), e.getMessage());
    }

    @Test
    void aTruncatedFileAndATailPastTheCapacityAreProtocolErrors() throws Exception {
        Files.write(dir.resolve("short"), new byte[10]);
        ProtocolException e =
                assertThrows(ProtocolException.class, () -> DescriptorRings.open(dir.resolve("short"), SESSION));
        assertTrue(e.getMessage().contains("smaller than its header"), e.getMessage());
        try (DescriptorRings producer = DescriptorRings.create(dir.resolve("rings"), 1, 4, SESSION);
                DescriptorRings consumer = DescriptorRings.open(dir.resolve("rings"), SESSION);
                FileChannel ch =
                        FileChannel.open(dir.resolve("rings"), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            producer.writer(0).claim(1);
            DescriptorRings.Reader r = consumer.reader(0, 1);
            // a producer that claims more entries than the ring holds
            ch.write(
                    ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, producer.capacity() + 5L),
                    RingLayout.HEADER_BYTES + RingLayout.TAIL);
            e = assertThrows(ProtocolException.class, r::poll);
            assertTrue(e.getMessage().contains("more than its " + producer.capacity()), e.getMessage());
        }
    }

    /**
     * A reader that sleeps whenever its ring is empty, fed by a writer that pauses a random few microseconds
     * between entries: every entry arrives, and no sleep runs into its (generous) timeout, which only a lost
     * wake-up would cause.
     */
    @Test
    void aSleepingReaderIsWokenForEveryEntryAndNoWakeUpIsLost() throws Exception {
        int entries = 20_000;
        try (DescriptorRings producer = DescriptorRings.create(dir.resolve("rings"), 1, 64, SESSION);
                DescriptorRings consumer = DescriptorRings.open(dir.resolve("rings"), SESSION)) {
            DescriptorRings.Writer w = producer.writer(0);
            w.claim(3);
            DescriptorRings.Reader r = consumer.reader(0, 3);
            AtomicLong timeouts = new AtomicLong();
            AtomicLong parks = new AtomicLong();
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread reader = Thread.ofPlatform().start(() -> {
                try {
                    Futex futex = new Futex();
                    for (long next = 0; next < entries; ) {
                        int bell = r.doorbell();
                        ByteBuffer f = r.poll();
                        if (f != null) {
                            assertEquals(next++, read(f));
                            continue;
                        }
                        parks.incrementAndGet();
                        if (r.park(futex, bell, TimeUnit.SECONDS.toNanos(5)) == Futex.ETIMEDOUT) {
                            timeouts.incrementAndGet();
                        }
                    }
                } catch (Throwable t) {
                    failed.set(t);
                }
            });
            Futex futex = new Futex();
            Random random = new Random(42);
            for (long k = 0; k < entries; k++) {
                write(w, k);
                while (!w.publish(futex)) {
                    Thread.onSpinWait(); // the reader is behind by a whole ring: let it catch up
                    write(w, k);
                }
                int pause = random.nextInt(20);
                if (pause > 0) {
                    LockSupport.parkNanos(pause * 1000L);
                }
            }
            reader.join(TimeUnit.MINUTES.toMillis(2));
            assertFalse(reader.isAlive(), "the reader did not get all " + entries + " entries");
            if (failed.get() != null) {
                throw new AssertionError(failed.get());
            }
            assertTrue(parks.get() > 0, "the reader never slept, so the test proved nothing");
            assertEquals(0, timeouts.get(), "sleeps that no wake-up ended, of " + parks.get());
        }
    }
}
