package io.tensorsocket.pipeline;

import io.tensorsocket.ProducerStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decoded samples kept across epochs, so a producer decodes each image once per sweep rather than once per epoch
 * and runs only the augmentation in later epochs. A sample is kept the first time it is decoded while room is left,
 * and never evicted: a data set larger than the cache keeps as many samples as fit and decodes the rest every epoch
 * (evicting would make every sample miss in turn, as an LRU cache over a shuffled data set does). What is kept is the
 * decoder's output, byte for byte, so an augmentation run on a kept image writes the same bytes as on a fresh decode.
 *
 * <p>The images live off-heap in this JVM, in chunks of {@value #CHUNK_MIB} MiB allocated as the cache fills (the
 * first touch of fresh memory is what costs; the chunks are written once). The pipeline's worker threads look samples
 * up and add them concurrently, several pipelines ({@code --variant}s) over one cache too: a sample is decoded once
 * while it fits. The first lookup that misses claims the sample; a lookup of a sample being decoded elsewhere waits
 * for that decode (at most {@link #LOAD_WAIT_MILLIS}, for a decoder that hangs) and gets the kept image.
 */
public final class DecodedCache implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DecodedCache.class);
    static final long CHUNK_MIB = 64;
    private static final long CHUNK = CHUNK_MIB << 20;

    private final long capacity;
    private final int shortSide;
    private final AtomicReferenceArray<Kept> kept;
    private final Arena memory = Arena.ofShared();
    private final ConcurrentHashMap<Long, Counts> byEpoch = new ConcurrentHashMap<>();
    private final LongAdder samplesHeld = new LongAdder();
    /** The samples being decoded now by the lookup that claimed them, each released when its decode ended. */
    private final ConcurrentHashMap<Integer, CountDownLatch> loading = new ConcurrentHashMap<>();
    /** How long a lookup waits for another worker's decode of the same sample before it decodes it itself. */
    static final long LOAD_WAIT_MILLIS = 10_000;

    private volatile boolean fullNow;
    private MemorySegment chunk = MemorySegment.NULL;
    private long chunkUsed;
    private long bytesHeld;
    private boolean full;

    /** One kept image: its size and its pixels, {@link RgbImage}'s layout. */
    private record Kept(int width, int height, MemorySegment pixels) {}

    /** Hits and misses of one epoch. */
    private static final class Counts {
        final LongAdder hits = new LongAdder();
        final LongAdder misses = new LongAdder();
    }

    /**
     * A cache of at most {@code capacityBytes} of decoded images for a data set of {@code samples} samples.
     *
     * @throws IllegalArgumentException for a capacity of 0 or less, or above what the machine can give (see {@link
     *     #checkFits})
     */
    public DecodedCache(long capacityBytes, int samples) {
        this(capacityBytes, samples, 0);
    }

    /**
     * A cache of at most {@code capacityBytes} of decoded images for a data set of {@code samples} samples, each kept
     * shrunk to a shorter side of {@code shortSide} pixels (where it is longer; 0 keeps them as decoded): the pipelines
     * that read it start their augmentation from images of that size, cached or not.
     *
     * @throws IllegalArgumentException for a capacity of 0 or less, or above what the machine can give (see {@link
     *     #checkFits}), or a short side below 0
     */
    public DecodedCache(long capacityBytes, int samples, int shortSide) {
        if (shortSide < 0) {
            throw new IllegalArgumentException("a --cache-resize short side of " + shortSide
                    + " pixels; give 1 or more, or leave it out to keep the decoded images at their size");
        }
        this.shortSide = shortSide;
        if (capacityBytes <= 0) {
            throw new IllegalArgumentException("a decoded-sample cache holds more than 0 bytes, not " + capacityBytes
                    + "; leave the cache out to decode every epoch");
        }
        checkFits(capacityBytes, availableMemory());
        this.capacity = capacityBytes;
        this.kept = new AtomicReferenceArray<>(samples);
    }

    /**
     * Refuses a cache larger than the memory this machine has available ({@code MemAvailable}, from {@code
     * /proc/meminfo}; -1 where unknown), with the figures and what to give instead.
     */
    static void checkFits(long capacityBytes, long available) {
        if (available > 0 && capacityBytes > available) {
            throw new IllegalArgumentException("a decoded-sample cache of " + (capacityBytes >> 20)
                    + " MiB does not fit: this machine has " + (available >> 20)
                    + " MiB of memory available; give --cache-mb " + Math.max(1, (available >> 20) * 3 / 4)
                    + " or less (what does not fit is decoded every epoch)");
        }
    }

    /** {@code MemAvailable} of {@code /proc/meminfo} in bytes, or -1 where it cannot be read. */
    static long availableMemory() {
        return ProcFigures.bytes(Path.of("/proc/meminfo"), "MemAvailable");
    }

    /** The shorter side, in pixels, its images are shrunk to before they are kept and used; 0: as decoded. */
    public int shortSide() {
        return shortSide;
    }

    /** The most bytes of images it keeps. */
    public long capacityBytes() {
        return capacity;
    }

    /** Bytes of images kept now. */
    public synchronized long bytesHeld() {
        return bytesHeld;
    }

    /** Samples kept now. */
    public long samplesHeld() {
        return samplesHeld.sum();
    }

    /** Lookups of epoch {@code epoch} that found their sample kept. */
    public long hits(long epoch) {
        Counts c = byEpoch.get(epoch);
        return c == null ? 0 : c.hits.sum();
    }

    /** Lookups of epoch {@code epoch} that had to decode. */
    public long misses(long epoch) {
        Counts c = byEpoch.get(epoch);
        return c == null ? 0 : c.misses.sum();
    }

    /**
     * Sample {@code sampleId}'s kept image as a view (for reading only; valid until the cache closes), or null where
     * the caller decodes it: then it {@link #offer}s the decode and calls {@link #loaded} however the decode ended.
     * Where another worker decodes that sample now, waits for it. Counts a hit or a miss for {@code epoch}.
     */
    public RgbImage lookup(long epoch, int sampleId) {
        Counts c = byEpoch.computeIfAbsent(epoch, e -> new Counts());
        Kept k = kept.get(sampleId);
        if (k == null && !fullNow) {
            CountDownLatch mine = new CountDownLatch(1);
            CountDownLatch other = loading.putIfAbsent(sampleId, mine);
            if (other == null) {
                k = kept.get(sampleId); // kept between the look and the claim: no decode after all
                if (k != null) {
                    loaded(sampleId);
                }
            } else {
                awaitOther(other);
                k = kept.get(sampleId);
                if (k == null) { // the other decode failed, or did not fit: this worker decodes it, unclaimed
                    c.misses.increment();
                    return null;
                }
            }
        }
        if (k == null) {
            c.misses.increment();
            return null;
        }
        c.hits.increment();
        return RgbImage.view(k.width, k.height, k.pixels);
    }

    private static void awaitOther(CountDownLatch other) {
        try {
            other.await(LOAD_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The decode of sample {@code sampleId} a {@link #lookup} left to its caller ended: lookups waiting for it go on. */
    public void loaded(int sampleId) {
        CountDownLatch l = loading.remove(sampleId);
        if (l != null) {
            l.countDown();
        }
    }

    /** Keeps a copy of {@code image}, sample {@code sampleId}'s fresh decode, where room is left and none is kept. */
    public void offer(int sampleId, RgbImage image) {
        if (kept.get(sampleId) != null) {
            return;
        }
        long bytes = image.pixels().byteSize();
        MemorySegment into = allocate(bytes);
        if (into == null) {
            return;
        }
        MemorySegment.copy(image.pixels(), 0, into, 0, bytes);
        if (kept.compareAndSet(sampleId, null, new Kept(image.width(), image.height(), into))) {
            samplesHeld.increment();
        }
    }

    /** Room for {@code bytes} more, or null where the cache is full (said once). */
    private synchronized MemorySegment allocate(long bytes) {
        if (bytesHeld + bytes > capacity) {
            if (!full) {
                full = true;
                fullNow = true; // lookups stop claiming: a sample that is not kept now never will be
                log.info(
                        "decoded-sample cache full with {} samples ({} MiB of {} MiB): the other samples are decoded"
                                + " every epoch",
                        samplesHeld.sum(),
                        bytesHeld >> 20,
                        capacity >> 20);
            }
            return null;
        }
        if (chunk.byteSize() - chunkUsed < bytes) {
            chunk = memory.allocate(Math.max(bytes, Math.min(CHUNK, capacity - bytesHeld)), 64);
            chunkUsed = 0;
        }
        MemorySegment s = chunk.asSlice(chunkUsed, bytes);
        chunkUsed += bytes;
        bytesHeld += bytes;
        return s;
    }

    /** What it holds and did in all epochs so far, as {@code status} and the metrics show it. */
    public ProducerStatus.Cache figures() {
        long hits = 0;
        long loads = 0;
        for (Counts c : byEpoch.values()) {
            hits += c.hits.sum();
            loads += c.misses.sum();
        }
        return new ProducerStatus.Cache(capacity, bytesHeld(), samplesHeld(), kept.length(), hits, loads);
    }

    /** A line for the producer's log and status: what it holds and how the last epoch went. */
    public String summary(long epoch) {
        return String.format(
                "decoded-sample cache: %d samples, %d MiB of %d MiB%s; epoch %d: %d hits, %d decoded",
                samplesHeld(),
                bytesHeld() >> 20,
                capacity >> 20,
                shortSide == 0 ? "" : " (shrunk to a short side of " + shortSide + ")",
                epoch,
                hits(epoch),
                misses(epoch));
    }

    /** Frees the images; views handed out must no longer be read. */
    @Override
    public void close() {
        memory.close();
    }
}
