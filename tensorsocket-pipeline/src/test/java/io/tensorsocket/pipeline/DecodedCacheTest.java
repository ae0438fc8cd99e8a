package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Decode once per sweep: a pipeline that keeps decoded images serves, every epoch, the very bytes of a pipeline that
 * decodes every time, fills its cache only while room is left and never evicts, and pipelines that augment
 * differently share one cache, each still serving what it would alone.
 */
class DecodedCacheTest {
    private static final String[] CLASSES = {"cat", "dog", "eel"};
    private static final TransformPipeline TRAIN = TransformPipeline.of(List.of(
            Transform.randomResizedCrop(24),
            Transform.randomHorizontalFlip(0.5),
            Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD)));
    private static final TransformPipeline LIGHT = TransformPipeline.of(List.of(
            new Transform.RandomResizedCrop(16, 16, 0.6, 1.0, 3.0 / 4.0, 4.0 / 3.0),
            Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD)));

    @TempDir
    static Path shared;

    static Path folder;

    @BeforeAll
    static void makeFolder() throws Exception {
        folder = TestImages.folder(shared.resolve("images"), CLASSES, 5, true);
    }

    private static ImagePipelineSource.Builder builder(TransformPipeline t) {
        return ImagePipelineSource.builder(folder)
                .transforms(t)
                .batchSize(4)
                .seed(7)
                .workers(2);
    }

    /** Epoch {@code epoch}'s images and labels, concatenated. */
    private static byte[][] epoch(ImagePipelineSource source, long epoch) throws Exception {
        CollectingSink sink = new CollectingSink(source.layout(), 2);
        source.emitEpoch(epoch, sink);
        return new byte[][] {sink.concatenated(0), sink.concatenated(1)};
    }

    @Test
    void aCachedPipelineServesTheBytesOfOneThatDecodesEveryEpochAndDecodesEachImageOnce() throws Exception {
        try (ImagePipelineSource plain = builder(TRAIN).build();
                ImagePipelineSource cached =
                        builder(TRAIN).cacheBytes(64L << 20).build()) {
            DecodedCache cache = cached.cache();
            for (long e = 0; e < 3; e++) {
                byte[][] want = epoch(plain, e);
                byte[][] got = epoch(cached, e);
                assertArrayEquals(want[0], got[0], "epoch " + e + "'s images");
                assertArrayEquals(want[1], got[1], "epoch " + e + "'s labels");
            }
            assertEquals(15, cache.samplesHeld());
            assertEquals(15, cache.misses(0), "epoch 0 decodes every image");
            assertEquals(0, cache.hits(0));
            assertEquals(15, cache.hits(1), "later epochs only augment");
            assertEquals(0, cache.misses(1));
            assertEquals(15, cache.hits(2));
            assertTrue(
                    cache.summary(2).contains("15 samples") && cache.summary(2).contains("15 hits"), cache.summary(2));
            assertFalse(
                    Arrays.equals(epoch(cached, 1)[0], epoch(cached, 2)[0]), "augmentation stays fresh every epoch");
        }
    }

    @Test
    void aCacheSmallerThanTheDataSetKeepsWhatFitsNeverEvictsAndDecodesTheRestEveryEpoch() throws Exception {
        long oneImage = 88L * 58 * 3; // the largest test image
        try (ImagePipelineSource plain = builder(TRAIN).build();
                ImagePipelineSource cached =
                        builder(TRAIN).cacheBytes(5 * oneImage).build()) {
            DecodedCache cache = cached.cache();
            byte[][] first = null;
            for (long e = 0; e < 3; e++) {
                byte[][] got = epoch(cached, e);
                assertArrayEquals(epoch(plain, e)[0], got[0], "epoch " + e);
                if (e == 0) {
                    first = got;
                }
            }
            long held = cache.samplesHeld();
            assertTrue(held >= 5 && held < 15, "held " + held);
            assertTrue(cache.bytesHeld() <= cache.capacityBytes());
            assertEquals(held, cache.hits(1), "what was kept stays kept");
            assertEquals(15 - held, cache.misses(1), "the rest is decoded each epoch");
            assertEquals(held, cache.hits(2));
            assertEquals(held, cache.samplesHeld(), "nothing evicted, nothing added after it filled");
            assertArrayEquals(first[0], epoch(cached, 0)[0], "an epoch replays identically");
        }
    }

    @Test
    void pipelinesThatAugmentDifferentlyShareOneCacheAndEachServesWhatItWouldAlone() throws Exception {
        try (DecodedCache cache = new DecodedCache(64L << 20, 15);
                ImagePipelineSource heavy = builder(TRAIN).cache(cache).build();
                ImagePipelineSource light = builder(LIGHT).cache(cache).build();
                ImagePipelineSource heavyAlone = builder(TRAIN).build();
                ImagePipelineSource lightAlone = builder(LIGHT).build()) {
            for (long e = 0; e < 2; e++) {
                assertArrayEquals(epoch(heavyAlone, e)[0], epoch(heavy, e)[0], "heavy, epoch " + e);
                assertArrayEquals(epoch(lightAlone, e)[0], epoch(light, e)[0], "light, epoch " + e);
            }
            assertEquals(15, cache.samplesHeld(), "each image kept once for both");
            assertEquals(15, cache.misses(0), "decoded once in epoch 0, by whichever pipeline came first");
            assertEquals(15, cache.hits(0));
            assertEquals(30, cache.hits(1));
        }
    }

    @Test
    void aCacheOfShrunkImagesServesWhatAnUncachedPipelineWithTheSameShrinkServesAndHoldsLess() throws Exception {
        try (ImagePipelineSource plain = builder(TRAIN).cacheResize(20).build();
                ImagePipelineSource cached =
                        builder(TRAIN).cacheBytes(64L << 20).cacheResize(20).build();
                ImagePipelineSource full = builder(TRAIN).cacheBytes(64L << 20).build()) {
            for (long e = 0; e < 2; e++) {
                byte[][] want = epoch(plain, e);
                assertArrayEquals(want[0], epoch(cached, e)[0], "epoch " + e + "'s images");
                assertFalse(Arrays.equals(want[0], epoch(full, e)[0]), "the augmentation starts from the shrunk image");
            }
            assertEquals(20, cached.cache().shortSide());
            assertEquals(15, cached.cache().samplesHeld());
            assertEquals(15, cached.cache().hits(1));
            long fullBytes = full.cache().bytesHeld();
            long shrunk = cached.cache().bytesHeld();
            assertTrue(shrunk < fullBytes / 2, shrunk + " bytes shrunk against " + fullBytes + " as decoded");
            assertTrue(cached.description().contains("cacheResize=20"), cached.description());
            assertTrue(
                    cached.cache().summary(1).contains("short side of 20"),
                    cached.cache().summary(1));
        }
    }

    @Test
    void aPipelineOfAnotherShortSideThanItsSharedCacheIsRefused() throws Exception {
        try (DecodedCache cache = new DecodedCache(1L << 20, 15, 32)) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> builder(TRAIN).cache(cache).cacheResize(16).build());
            assertTrue(
                    e.getMessage().contains("give every pipeline of the cache the same --cache-resize"),
                    e.getMessage());
            try (ImagePipelineSource same = builder(TRAIN).cache(cache).build()) {
                assertTrue(same.description().contains("cacheResize=32"), "the cache's short side applies");
            }
        }
        assertThrows(IllegalArgumentException.class, () -> builder(TRAIN).cacheResize(0));
    }

    @Test
    void samplesOfferedFromManyThreadsAtOnceAreKeptOnce() throws Exception {
        try (DecodedCache cache = new DecodedCache(1L << 20, 4);
                RgbImage img = new RgbImage()) {
            img.reset(10, 10).fill((byte) 9);
            ExecutorService pool = Executors.newFixedThreadPool(8);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int id = t % 4;
                done.add(pool.submit(() -> {
                    go.await();
                    cache.offer(id, img);
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(10, TimeUnit.SECONDS);
            }
            pool.shutdown();
            assertEquals(4, cache.samplesHeld());
            RgbImage kept = cache.lookup(0, 3);
            assertEquals(10, kept.width());
            assertEquals(9, kept.pixels().get(ValueLayout.JAVA_BYTE, 299));
            try (DecodedCache empty = new DecodedCache(1L << 20, 4)) {
                assertNull(empty.lookup(0, 1), "an empty cache holds nothing");
            }
        }
    }

    @Test
    void workersLookingUpTheSameSamplesAtOnceDecodeEachOnceAndTheCacheHoldsItOnce() throws Exception {
        // three variants' workers, as under --variant, racing for the same uncached samples
        try (DecodedCache cache = new DecodedCache(1L << 20, 50);
                RgbImage img = new RgbImage()) {
            img.reset(10, 10).fill((byte) 7);
            AtomicInteger decodes = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(6);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                done.add(pool.submit(() -> {
                    go.await();
                    for (int id = 0; id < 50; id++) {
                        if (cache.lookup(0, id) == null) {
                            try {
                                decodes.incrementAndGet();
                                Thread.sleep(1); // a decode takes a while: the others ask meanwhile
                                cache.offer(id, img);
                            } finally {
                                cache.loaded(id);
                            }
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(30, TimeUnit.SECONDS);
            }
            pool.shutdown();
            assertEquals(50, decodes.get(), "one decode a sample");
            assertEquals(50, cache.samplesHeld());
            assertEquals(50L * 300, cache.bytesHeld(), "one copy a sample");
            assertEquals(50, cache.misses(0));
            assertEquals(250, cache.hits(0));
        }
    }

    @Test
    void aLookupWaitingForADecodeThatFailedDecodesTheSampleItself() throws Exception {
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (DecodedCache cache = new DecodedCache(1L << 20, 4)) {
            assertNull(cache.lookup(0, 2), "the first lookup claims the sample");
            Future<RgbImage> waiting = other.submit(() -> cache.lookup(0, 2));
            Thread.sleep(50);
            assertFalse(waiting.isDone(), "the second waits for the first's decode");
            cache.loaded(2); // the first decode failed: nothing offered
            assertNull(waiting.get(5, TimeUnit.SECONDS), "so the second decodes it itself");
        } finally {
            other.shutdownNow();
        }
    }

    @Test
    void aCacheThatCannotFitIsRefusedWithTheFigures() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> DecodedCache.checkFits(8L << 30, 2L << 30));
        assertTrue(
                e.getMessage().contains("8192 MiB does not fit")
                        && e.getMessage().contains("2048 MiB of memory available")
                        && e.getMessage().contains("--cache-mb 1536 or less"),
                e.getMessage());
        DecodedCache.checkFits(1L << 30, 2L << 30);
        DecodedCache.checkFits(1L << 30, -1); // unknown: nothing to refuse on
        assertThrows(IllegalArgumentException.class, () -> new DecodedCache(0, 4));
    }
}
