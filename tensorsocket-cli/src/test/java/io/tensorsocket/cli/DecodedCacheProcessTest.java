package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Decode once per sweep, as users run it: {@code serve --images DIR --cache-mb N --variant NAME=TRANSFORMS} serves
 * one folder under two augmentations from one decoded copy of each image, and each stream is byte for byte what a
 * producer of that augmentation alone, decoding every epoch, serves with the same seed.
 */
class DecodedCacheProcessTest extends ProcessTestBase {
    private static final String HEAVY = "RandomResizedCrop(32), RandomHorizontalFlip(0.5), Normalize(imagenet)";
    private static final String LIGHT = "RandomResizedCrop(24, scale=(0.6, 1.0)), Normalize(imagenet)";

    private Proc serveImages(Path images, String name, String transform, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "serve",
                "--name",
                name,
                "--images",
                images.toString(),
                "--transform",
                transform,
                "--batch-size",
                "8",
                "--epochs",
                "3",
                "--seed",
                "11",
                "--workers",
                "2"));
        args.addAll(List.of(extra));
        return start(args.toArray(String[]::new)).awaitReady();
    }

    /** Every batch's image bytes of {@code epochs} epochs of producer {@code name}. */
    private List<byte[]> read(String name, int epochs) {
        List<byte[]> out = new ArrayList<>();
        try (TensorConsumer c = TensorConsumer.connect(
                base.resolve(name), ConsumerOptions.batchSize(8).withConnectTimeout(Duration.ofSeconds(60)))) {
            for (int e = 0; e < epochs; e++) {
                for (Batch b : c) {
                    out.add(b.tensor("image").data().toArray(ValueLayout.JAVA_BYTE));
                }
            }
        }
        return out;
    }

    @Test
    void variantsShareOneDecodeAndEachEqualsItsPrivatePipeline() throws Exception {
        Path images = DemoImages.ensure(base.resolve("images"), 40, 4);
        // every image shrunk to a short side of 96 before it is kept and augmented (--cache-resize), cached or not
        Proc shared = serveImages(
                images,
                "sweep",
                HEAVY,
                "--cache-mb",
                "64",
                "--cache-resize",
                "96",
                "--variant",
                "sweep-light=" + LIGHT);
        assertTrue(
                shared.lines().getFirst().contains("\"variants\": \"sweep-light\""),
                shared.lines().toString());
        Proc heavyAlone = serveImages(images, "heavy", HEAVY, "--cache-resize", "96");
        Proc lightAlone = serveImages(images, "light", LIGHT, "--cache-resize", "96");
        List<byte[]> heavy = read("sweep", 3);
        List<byte[]> light = read("sweep-light", 3);
        List<byte[]> wantHeavy = read("heavy", 3);
        List<byte[]> wantLight = read("light", 3);
        assertEquals(wantHeavy.size(), heavy.size());
        assertEquals(15, heavy.size(), "5 batches of 8 per epoch, 3 epochs");
        for (int i = 0; i < heavy.size(); i++) {
            assertArrayEquals(wantHeavy.get(i), heavy.get(i), "heavy batch " + i);
            assertArrayEquals(wantLight.get(i), light.get(i), "light batch " + i);
        }
        for (Proc p : List.of(shared, heavyAlone, lightAlone)) {
            assertEquals(0, p.exitCode(Duration.ofSeconds(60)), p.stderr());
        }
        // each image decoded once for both augmentations, then only augmented
        String log = shared.stderr();
        assertTrue(log.contains("decoded-sample cache of 64 MiB for 40 images"), log);
        assertTrue(log.contains("epoch 1: 80 hits, 0 decoded") && log.contains("epoch 2: 80 hits, 0 decoded"), log);
        assertTrue(log.contains("decoded-sample cache: 40 samples"), log);
        assertTrue(log.contains("(shrunk to a short side of 96)"), log);
        try (var left = Files.list(base)) {
            assertEquals(
                    List.of("images"), left.map(p -> p.getFileName().toString()).toList(), "nothing left");
        }
    }

    /** What a producer of the HEAVY augmentation without a cache serves: every batch's image bytes by position. */
    private Map<Long, byte[]> uncached(Path images, String name) throws Exception {
        serveImages(images, name, HEAVY);
        try (TensorConsumer c = TensorConsumer.connect(
                base.resolve(name), ConsumerOptions.batchSize(8).withConnectTimeout(Duration.ofSeconds(60)))) {
            return readByPosition(c);
        }
    }

    /** Every batch's image bytes by stream position, read until the stream ends; no position twice. */
    private static Map<Long, byte[]> readByPosition(TensorConsumer c) {
        Map<Long, byte[]> out = new TreeMap<>();
        while (!c.isEndOfStream()) {
            for (Batch b : c) {
                long pos = c.streamPosition(b);
                byte[] was = out.put(pos, b.tensor("image").data().toArray(ValueLayout.JAVA_BYTE));
                assertTrue(was == null, "stream position " + pos + " twice");
            }
        }
        return out;
    }

    /** Each producer epoch's samples (40 images, batches of 8), as a multiset of their bytes. */
    private static Map<Long, Map<ByteBuffer, Integer>> samplesByEpoch(Map<Long, byte[]> batches) {
        Map<Long, Map<ByteBuffer, Integer>> out = new TreeMap<>();
        batches.forEach((pos, bytes) -> {
            int sampleBytes = bytes.length / 8;
            for (int i = 0; i < 8; i++) {
                ByteBuffer sample = ByteBuffer.wrap(Arrays.copyOfRange(bytes, i * sampleBytes, (i + 1) * sampleBytes));
                out.computeIfAbsent((pos + i) / 40, e -> new HashMap<>()).merge(sample, 1, Integer::sum);
            }
        });
        return out;
    }

    @Test
    void aLateJoinerOfACachingProducerGetsTheSamplesAnUncachedProducerServesInEveryEpoch() throws Exception {
        Path images = DemoImages.ensure(base.resolve("images"), 40, 4);
        Map<Long, byte[]> want = uncached(images, "reference");
        assertEquals(15, want.size(), "5 batches of 8 per epoch, 3 epochs");
        Proc cached = serveImages(images, "cached", HEAVY, "--cache-mb", "64");
        ConsumerOptions opts = ConsumerOptions.batchSize(8).withConnectTimeout(Duration.ofSeconds(60));
        Map<Long, byte[]> early = new TreeMap<>();
        Map<Long, byte[]> late;
        try (TensorConsumer first = TensorConsumer.connect(base.resolve("cached"), opts)) {
            // the first consumer reads into the second epoch, whose images come from the cache; then another joins
            Iterator<Batch> it = first.iterator();
            while (early.size() < 7) {
                if (!it.hasNext()) {
                    it = first.iterator();
                    continue;
                }
                Batch b = it.next();
                early.put(first.streamPosition(b), b.tensor("image").data().toArray(ValueLayout.JAVA_BYTE));
            }
            try (TensorConsumer joiner = TensorConsumer.connect(base.resolve("cached"), opts)) {
                CompletableFuture<Map<Long, byte[]>> joined =
                        CompletableFuture.supplyAsync(() -> readByPosition(joiner));
                while (it.hasNext()) {
                    Batch b = it.next();
                    early.put(first.streamPosition(b), b.tensor("image").data().toArray(ValueLayout.JAVA_BYTE));
                }
                early.putAll(readByPosition(first));
                late = joined.get(2, TimeUnit.MINUTES);
            }
        }
        assertEquals(0, cached.exitCode(Duration.ofSeconds(60)), cached.stderr());
        assertEquals(want.keySet(), early.keySet(), "the first consumer: every position of the three epochs once");
        assertTrue(late.keySet().stream().allMatch(p -> p >= 40), "joined after the first epoch: " + late.keySet());
        assertTrue(late.size() >= 2, "the joiner read " + late.keySet());
        // A joiner's exact epochs change the order of the epochs after it joined; each sample's augmentation depends on
        // the seed, the epoch and the sample only: every epoch holds the same augmented samples as the reference's.
        Map<Long, Map<ByteBuffer, Integer>> wantByEpoch = samplesByEpoch(want);
        assertEquals(wantByEpoch, samplesByEpoch(early), "the first consumer's epochs, sample for sample");
        samplesByEpoch(late)
                .forEach((epoch, samples) -> samples.forEach((sample, n) -> assertTrue(
                        wantByEpoch.get(epoch).getOrDefault(sample, 0) >= n,
                        "the late joiner got a sample in epoch " + epoch
                                + " that the uncached producer did not serve")));
        assertTrue(cached.stderr().contains("epoch 1: 40 hits, 0 decoded"), cached.stderr());
    }

    @Test
    void theRanksOfAJobOnACachingProducerTogetherGetEachEpochOfAnUncachedProducer() throws Exception {
        Path images = DemoImages.ensure(base.resolve("images"), 40, 4);
        Map<Long, byte[]> want = uncached(images, "plain");
        Proc cached = serveImages(images, "ranked", HEAVY, "--cache-mb", "64", "--min-consumers", "2");
        // a job of two ranks of different batch sizes, started together, as torchrun starts them (each on a thread
        // of its own: the common pool may have one, and a rank waits in its connect for the other)
        List<Future<List<Map<ByteBuffer, Integer>>>> ranks = new ArrayList<>();
        int[] batchSizes = {3, 8};
        Map<Long, Map<ByteBuffer, Integer>> got = new TreeMap<>();
        try (ExecutorService threads = Executors.newFixedThreadPool(2)) {
            for (int r = 0; r < 2; r++) {
                ConsumerOptions o = ConsumerOptions.batchSize(batchSizes[r])
                        .withConnectTimeout(Duration.ofSeconds(60))
                        .withRank("cached-job", r, 2);
                ranks.add(threads.submit(() -> epochsOf(base.resolve("ranked"), o)));
            }
        }
        for (Future<List<Map<ByteBuffer, Integer>>> rank : ranks) {
            List<Map<ByteBuffer, Integer>> epochs = rank.get(2, TimeUnit.MINUTES);
            assertEquals(3, epochs.size(), "each rank reads the producer's three epochs");
            for (int e = 0; e < epochs.size(); e++) {
                assertEquals(
                        20,
                        epochs.get(e).values().stream()
                                .mapToInt(Integer::intValue)
                                .sum(),
                        "half of 40");
                Map<ByteBuffer, Integer> into = got.computeIfAbsent((long) e, k -> new HashMap<>());
                epochs.get(e).forEach((sample, n) -> into.merge(sample, n, Integer::sum));
            }
        }
        assertEquals(0, cached.exitCode(Duration.ofSeconds(60)), cached.stderr());
        assertEquals(samplesByEpoch(want), got, "the two ranks' epochs together, sample for sample");
        assertTrue(cached.stderr().contains("epoch 1: 40 hits, 0 decoded"), cached.stderr());
    }

    /** Each epoch a consumer reads until its stream ends, as a multiset of its samples' image bytes. */
    private static List<Map<ByteBuffer, Integer>> epochsOf(Path producer, ConsumerOptions options) {
        List<Map<ByteBuffer, Integer>> epochs = new ArrayList<>();
        try (TensorConsumer c = TensorConsumer.connect(producer, options)) {
            while (!c.isEndOfStream()) {
                Map<ByteBuffer, Integer> epoch = new HashMap<>();
                for (Batch b : c) {
                    byte[] bytes = b.tensor("image").data().toArray(ValueLayout.JAVA_BYTE);
                    int sampleBytes = bytes.length / b.size();
                    for (int i = 0; i < b.size(); i++) {
                        epoch.merge(
                                ByteBuffer.wrap(Arrays.copyOfRange(bytes, i * sampleBytes, (i + 1) * sampleBytes)),
                                1,
                                Integer::sum);
                    }
                }
                if (!epoch.isEmpty()) {
                    epochs.add(epoch);
                }
            }
        }
        return epochs;
    }

    @Test
    void aCachingProducerKilledWhileServingFailsItsConsumersAndCleanLeavesNothing() throws Exception {
        Path images = DemoImages.ensure(base.resolve("images"), 40, 4);
        List<String> args = new ArrayList<>(List.of(
                "serve", "--name", "k", "--images", images.toString(), "--transform", HEAVY, "--batch-size", "8"));
        args.addAll(List.of("--epochs", "0", "--cache-mb", "64", "--variant", "k-light=" + LIGHT));
        Proc producer = start(args.toArray(String[]::new)).awaitReady();
        RuntimeException failed = null;
        try (TensorConsumer c = TensorConsumer.connect(
                base.resolve("k-light"), ConsumerOptions.batchSize(8).withConnectTimeout(Duration.ofSeconds(60)))) {
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (System.nanoTime() < deadline) {
                for (Batch b : c) {
                    assertEquals(8, b.size());
                }
                // past the first epoch the cache holds every image: status says so, then the producer dies under
                // its consumer
                if (producer.stderr().contains("epoch 1: ") && producer.isAlive()) {
                    assertCacheShown("k", "k-light");
                    producer.kill();
                }
            }
        } catch (RuntimeException e) {
            failed = e;
        }
        assertTrue(failed != null, "the consumer read on for 120 s after its producer was killed");
        assertTrue(failed.getMessage().contains(Long.toString(producer.pid())), failed.toString());
        Proc clean = start("clean");
        assertEquals(0, clean.exitCode(Duration.ofSeconds(30)), clean.stderr());
        try (var left = Files.list(base)) {
            assertEquals(
                    List.of("images"),
                    left.map(p -> p.getFileName().toString()).toList(),
                    clean.lines().toString());
        }
    }

    /** {@code status} of each producer shows the one cache they share, holding all 40 images, each decoded once. */
    private void assertCacheShown(String... names) throws Exception {
        for (String name : names) {
            Proc json = start("status", name, "--once", "--json");
            assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
            String line = json.lines().getFirst();
            String cache =
                    line.substring(line.indexOf("\"cache\": {"), line.indexOf('}', line.indexOf("\"cache\": {")) + 1);
            Map<String, String> c = JsonLine.parse(cache.substring(cache.indexOf('{')));
            assertEquals(Long.toString(64L << 20), c.get("capacity_bytes"), cache);
            assertEquals("40", c.get("samples_held"), cache);
            assertEquals("40", c.get("samples"), cache);
            assertEquals("40", c.get("loads"), "each image decoded once for both variants: " + cache);
            assertTrue(Long.parseLong(c.get("hits")) >= 40, cache);
            Proc text = start("status", name, "--once");
            assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
            assertTrue(
                    text.lines().stream().anyMatch(l -> l.startsWith("cache    40 of 40 samples decoded and kept")),
                    text.lines().toString());
        }
    }

    @Test
    void aPythonTrialAugmentsWhatTheJavaPipelineDecodedAsItsPrivatePipelineWould() throws Exception {
        assumePython("numpy", "torch");
        Path images = DemoImages.ensure(base.resolve("images"), 40, 4);
        // decoded once (TurboJPEG where installed), resized and cropped alike every epoch, each sample's id served
        serveImages(
                images,
                "decoded",
                "Resize(40), CenterCrop(32)",
                "--output",
                "uint8",
                "--sample-ids",
                "--cache-mb",
                "64");
        Proc trial = startPython(
                Map.of(),
                pythonClient().resolve("tests/scripts/augment_case.py").toString(),
                "decoded",
                "--epochs",
                "2");
        assertEquals(0, trial.exitCode(Duration.ofMinutes(2)), trial.stderr());
        List<Map<String, String>> epochs = trial.json();
        assertEquals(2, epochs.size(), epochs.toString());
        for (Map<String, String> e : epochs) { // every sample: what the private pipeline over the decoded ones gives
            assertEquals("40", e.get("decoded"), e.toString());
            assertEquals("40", e.get("samples"), e.toString());
            assertEquals("40", e.get("unique"), e.toString());
            assertEquals("40", e.get("equal"), e.toString());
        }
        Proc refused = start(
                "serve",
                "--name",
                "n",
                "--synthetic",
                "samples=10,shape=2,dtype=float32,seed=1",
                "--batch-size",
                "5",
                "--sample-ids");
        assertEquals(1, refused.exitCode(Duration.ofSeconds(30)), refused.stderr());
        assertTrue(refused.errorLine().contains("--sample-ids applies to --images sources"), refused.stderr());
    }

    @Test
    void aVariantOfAnythingButAnImageFolderOrAGreedyCacheIsRefusedInOneLine() throws Exception {
        Proc synthetic = start(
                "serve",
                "--name",
                "s",
                "--synthetic",
                "samples=10,shape=2,dtype=float32,seed=1",
                "--batch-size",
                "5",
                "--variant",
                "t=Normalize(imagenet)");
        assertEquals(1, synthetic.exitCode(Duration.ofSeconds(30)), synthetic.stderr());
        assertTrue(synthetic.errorLine().contains("it applies to --images sources"), synthetic.stderr());
        Proc resized = start(
                "serve",
                "--name",
                "r",
                "--synthetic",
                "samples=10,shape=2,dtype=float32,seed=1",
                "--batch-size",
                "5",
                "--cache-resize",
                "64");
        assertEquals(1, resized.exitCode(Duration.ofSeconds(30)), resized.stderr());
        assertTrue(
                resized.errorLine().contains("--cache-resize keeps decoded images: it applies to --images sources"),
                resized.stderr());
        Path images = DemoImages.ensure(base.resolve("images"), 8, 2);
        Proc greedy = start(
                "serve", "--name", "g", "--images", images.toString(), "--batch-size", "4", "--cache-mb", "999999999");
        assertEquals(1, greedy.exitCode(Duration.ofSeconds(30)), greedy.stderr());
        assertTrue(greedy.errorLine().contains("MiB of memory available"), greedy.stderr());
        assertTrue(greedy.errorLine().contains("does not fit"), greedy.stderr());
    }
}
