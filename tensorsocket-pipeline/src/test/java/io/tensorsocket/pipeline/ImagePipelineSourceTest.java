package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.DType;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ImagePipelineSourceTest {
    private static final String[] CLASSES = {"zebra", "ant", "moth"};
    private static final TransformPipeline TRAIN = TransformPipeline.of(List.of(
            Transform.randomResizedCrop(24),
            Transform.randomHorizontalFlip(0.5),
            Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD)));

    @TempDir
    static Path shared;

    static Path folder;

    @TempDir
    Path dir;

    @BeforeAll
    static void makeFolder() throws Exception {
        folder = TestImages.folder(shared.resolve("images"), CLASSES, 5, true);
    }

    private static ImagePipelineSource.Builder builder() {
        return ImagePipelineSource.builder(folder)
                .transforms(TRAIN)
                .batchSize(4)
                .seed(99);
    }

    /** Runs one epoch into a fresh sink and returns it. */
    private static CollectingSink run(ImagePipelineSource source, long epoch, int claimsAhead) throws Exception {
        CollectingSink sink = new CollectingSink(source.layout(), claimsAhead);
        source.emitEpoch(epoch, sink);
        assertEquals(0, sink.unpublished(), "every claim is published");
        return sink;
    }

    @Test
    void labelsComeFromSortedFolderNames() throws Exception {
        ImageFolder f = ImageFolder.scan(folder);
        assertEquals(List.of("ant", "moth", "zebra"), f.classes());
        assertEquals(15, f.size());
        for (int i = 0; i < f.size(); i++) {
            assertEquals(
                    f.classes().get(f.label(i)),
                    f.file(i).getParent().getFileName().toString());
            if (i > 0 && f.label(i) == f.label(i - 1)) {
                assertTrue(f.file(i - 1).compareTo(f.file(i)) < 0, "files sorted within a class");
            }
        }
    }

    @Test
    void batchesFollowSamplerOrderWithTheirLabels() throws Exception {
        try (ImagePipelineSource source = builder().workers(2).build()) {
            assertEquals(15, source.samplesPerEpoch());
            assertEquals(
                    "image:float32[3, 24, 24]", source.layout().tensors().get(0).describe());
            assertEquals(DType.INT64, source.layout().tensors().get(1).dtype());
            assertEquals(0, source.layout().tensors().get(1).sampleShape().length, "label is a scalar per sample");
            CollectingSink sink = run(source, 3, 2);
            List<CollectingSink.Received> batches = sink.received();
            assertEquals(
                    List.of(4, 4, 4, 3),
                    batches.stream().map(CollectingSink.Received::samples).toList());
            int[] order = source.sampler().order(3);
            for (int b = 0, k = 0; b < batches.size(); b++) {
                for (int i = 0; i < batches.get(b).samples(); i++, k++) {
                    assertEquals(source.folder().label(order[k]), batches.get(b).longAt(1, i), "label of sample " + k);
                }
            }
            for (CollectingSink.Received r : batches) {
                for (int i = 0; i < r.samples() * 3 * 24 * 24; i++) {
                    float v = r.floatAt(0, i);
                    assertTrue(v >= -2.2f && v <= 2.7f, "normalized value " + v + " is in range, so it was written");
                }
            }
        }
    }

    @Test
    void withSampleIdsEachBatchSaysWhichSamplesItHoldsAndTheImagesStayTheSame() throws Exception {
        byte[] plain;
        try (ImagePipelineSource s = builder().workers(2).build()) {
            assertEquals(2, s.layout().tensors().size());
            plain = run(s, 3, 2).concatenated(0);
        }
        try (ImagePipelineSource s = builder().workers(2).sampleIds(true).build()) {
            assertEquals("index", s.layout().tensors().get(2).name());
            assertEquals(DType.INT64, s.layout().tensors().get(2).dtype());
            assertTrue(s.description().contains(" sampleIds=true"), s.description());
            CollectingSink sink = run(s, 3, 2);
            int[] order = s.sampler().order(3);
            int k = 0;
            for (CollectingSink.Received r : sink.received()) {
                for (int i = 0; i < r.samples(); i++, k++) {
                    assertEquals(order[k], r.longAt(2, i), "id of sample " + k);
                    assertEquals(s.folder().label(order[k]), r.longAt(1, i), "label of sample " + k);
                }
            }
            assertEquals(15, k);
            assertArrayEquals(plain, sink.concatenated(0), "the images do not depend on the ids being served");
        }
    }

    @Test
    void outputIsTheSameByteForByteWhateverTheThreadCount() throws Exception {
        byte[][] one;
        byte[][] many;
        try (ImagePipelineSource s = builder().workers(1).prefetch(1).build()) {
            CollectingSink sink = run(s, 5, 1);
            one = new byte[][] {sink.concatenated(0), sink.concatenated(1)};
            assertEquals(1, sink.maxOutstanding());
        }
        try (ImagePipelineSource s = builder().workers(3).prefetch(3).build()) {
            CollectingSink sink = run(s, 5, 3);
            many = new byte[][] {sink.concatenated(0), sink.concatenated(1)};
            assertTrue(sink.maxOutstanding() <= 3);
            byte[] nextEpoch = run(s, 6, 3).concatenated(0);
            assertFalse(Arrays.equals(many[0], nextEpoch), "a new epoch reshuffles and re-augments");
            assertArrayEquals(many[0], run(s, 5, 3).concatenated(0), "an epoch replays identically");
        }
        assertArrayEquals(one[0], many[0]);
        assertArrayEquals(one[1], many[1]);
    }

    @Test
    void heapAndNativeSlotsReceiveTheSameBytes() throws Exception {
        try (ImagePipelineSource s = builder().workers(2).build()) {
            CollectingSink nativeSink = new CollectingSink(s.layout(), 2, false);
            CollectingSink heapSink = new CollectingSink(s.layout(), 2, true);
            s.emitEpoch(0, nativeSink);
            s.emitEpoch(0, heapSink);
            assertArrayEquals(nativeSink.concatenated(0), heapSink.concatenated(0));
        }
    }

    @Test
    void dropLastEmitsOnlyFullBatches() throws Exception {
        try (ImagePipelineSource s = builder().dropLast(true).workers(2).build()) {
            assertEquals(12, s.samplesPerEpoch());
            CollectingSink sink = run(s, 0, 2);
            assertEquals(
                    List.of(4, 4, 4),
                    sink.received().stream()
                            .map(CollectingSink.Received::samples)
                            .toList());
        }
    }

    @Test
    void unshuffledIdentityTransformReproducesThePixelsOfPngFiles() throws Exception {
        Path root = dir.resolve("png");
        Files.createDirectories(root.resolve("only"));
        BufferedImage a = TestImages.pattern(12, 8, 1);
        BufferedImage b = TestImages.pattern(12, 8, 2);
        SyntheticImages.writePng(a, root.resolve("only/a.png"));
        SyntheticImages.writePng(b, root.resolve("only/b.png"));
        TransformPipeline identity = TransformPipeline.of(List.of(Transform.centerCrop(8, 12)), OutputFormat.UINT8_HWC);
        try (ImagePipelineSource s = ImagePipelineSource.builder(root)
                .transforms(identity)
                .batchSize(2)
                .shuffle(false)
                .workers(2)
                .build()) {
            CollectingSink sink = run(s, 0, 2);
            byte[] expected = new byte[2 * 12 * 8 * 3];
            System.arraycopy(TestImages.rgb(a), 0, expected, 0, 288);
            System.arraycopy(TestImages.rgb(b), 0, expected, 288, 288);
            assertArrayEquals(expected, sink.concatenated(0));
        }
    }

    @Test
    void aBrokenFileFailsTheEpochWithItsNameAndLeavesNoThreads() throws Exception {
        Path root = TestImages.folder(dir.resolve("broken"), new String[] {"a", "b"}, 6, false);
        Path bad = root.resolve("b/img_03.jpg");
        Files.write(bad, new byte[] {(byte) 0xFF, (byte) 0xD8, (byte) 0xFF, 0, 0, 0, 0});
        long before = pipelineThreads();
        ImagePipelineSource s = ImagePipelineSource.builder(root)
                .transforms(TRAIN)
                .batchSize(3)
                .workers(2)
                .build();
        CollectingSink sink = new CollectingSink(s.layout(), 2);
        SampleLoadException e = assertThrows(SampleLoadException.class, () -> s.emitEpoch(0, sink));
        assertTrue(e.getMessage().contains(bad.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("or move it out of"), "says what to do: " + e.getMessage());
        assertEquals(9, e.sampleId());
        s.close();
        // A pool reports termination just before its last thread returns, so give it a moment.
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (pipelineThreads() > before && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(before, pipelineThreads(), "worker threads end when the source closes");
    }

    @Test
    void missingOrEmptyFoldersAreExplained() throws Exception {
        var missing = assertThrows(IOException.class, () -> ImageFolder.scan(dir.resolve("nope")));
        assertTrue(missing.getMessage().contains("one sub-folder per class"), missing.getMessage());
        Files.createDirectories(dir.resolve("empty/cls"));
        Files.writeString(dir.resolve("empty/cls/readme.txt"), "no images");
        var empty = assertThrows(IOException.class, () -> ImageFolder.scan(dir.resolve("empty")));
        assertTrue(empty.getMessage().contains("ROOT/<class>/<image>.jpg"), empty.getMessage());
    }

    @Test
    void imagesLyingInTheRootAreRefusedWithTheLayoutExpected() throws Exception {
        Path flat = Files.createDirectories(dir.resolve("flat"));
        ImageIO.write(TestImages.pattern(8, 8, 1), "png", flat.resolve("a.png").toFile());
        Files.createDirectories(flat.resolve("sub"));
        ImageIO.write(
                TestImages.pattern(8, 8, 2), "png", flat.resolve("sub/b.png").toFile());
        var loose = assertThrows(IOException.class, () -> ImageFolder.scan(flat));
        assertTrue(
                loose.getMessage().contains("holds 1 image(s) directly, not in class sub-folders")
                        && loose.getMessage().contains("/<class>/<image>.jpg"),
                loose.getMessage());
    }

    private static long pipelineThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("tensorsocket-pipeline-"))
                .count();
    }
}
