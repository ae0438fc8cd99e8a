package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TransformPipelineTest {

    @Test
    void resizeOfShorterSideMatchesTorchvision() {
        // torchvision: Resize(256) of a 500x375 (w x h) image gives 256 x 341 (h x w).
        assertArrayEquals(new int[] {256, 341}, TransformPipeline.shorterSideTo(500, 375, 256));
        assertArrayEquals(new int[] {341, 256}, TransformPipeline.shorterSideTo(375, 500, 256));
        assertArrayEquals(new int[] {256, 256}, TransformPipeline.shorterSideTo(100, 100, 256));
    }

    @Test
    void centerCropOffsetRoundsHalfToEvenAndPadsLikeTorchvision() {
        assertEquals(3, TransformPipeline.centerCropOffset(10, 4));
        assertEquals(4, TransformPipeline.centerCropOffset(11, 4), "round(3.5) = 4");
        assertEquals(2, TransformPipeline.centerCropOffset(9, 4), "round(2.5) = 2, as Python rounds");
        assertEquals(-1, TransformPipeline.centerCropOffset(4, 6), "pad left (6 - 4) // 2 = 1");
        assertEquals(-1, TransformPipeline.centerCropOffset(4, 7), "pad left (7 - 4) // 2 = 1");
    }

    @Test
    void randomResizedCropStaysInsideTheImageWithinScaleAndRatio() {
        TransformPipeline p = TransformPipeline.of(List.of(Transform.randomResizedCrop(32)));
        for (int i = 0; i < 500; i++) {
            SampleGeometry g = p.plan(500, 375, new SplittableRandom(i));
            double w = g.x().scale() * 32;
            double h = g.y().scale() * 32;
            assertTrue(g.x().offset() >= 0 && g.x().offset() + w <= 500 + 1e-9, "crop inside width");
            assertTrue(g.y().offset() >= 0 && g.y().offset() + h <= 375 + 1e-9, "crop inside height");
            double area = w * h / (500.0 * 375);
            assertTrue(area > 0.07 && area < 1.01, "area fraction " + area);
            assertTrue(w / h > 0.74 && w / h < 1.35, "aspect " + w / h);
            assertEquals(g.x().offset(), g.x().clampLo(), 1e-9, "the resize sees only the crop");
        }
    }

    @Test
    void randomResizedCropFallsBackToTheCentreAfterTenAttempts() {
        // Ratio 2 with the whole area never fits a square image: torchvision then takes the centred
        // full-width crop of height round(100 / 2).
        TransformPipeline p =
                TransformPipeline.of(List.of(new Transform.RandomResizedCrop(10, 10, 1.0, 1.0, 2.0, 2.0)));
        SampleGeometry g = p.plan(100, 100, new SplittableRandom(1));
        assertEquals(0, g.x().offset(), 1e-9);
        assertEquals(10.0, g.x().scale(), 1e-9);
        assertEquals(25, g.y().offset(), 1e-9);
        assertEquals(5.0, g.y().scale(), 1e-9);
    }

    @Test
    void planDependsOnlyOnTheRandomStream() {
        TransformPipeline p = TransformPipeline.imagenetTrain(224);
        assertEquals(p.plan(500, 375, Seeds.forSample(1, 2, 3)), p.plan(500, 375, Seeds.forSample(1, 2, 3)));
        assertTrue(!p.plan(500, 375, Seeds.forSample(1, 2, 3)).equals(p.plan(500, 375, Seeds.forSample(1, 3, 3))));
    }

    @Test
    void outputShapeMustBeFixedAndNormalizeLast() {
        assertThrows(IllegalArgumentException.class, () -> TransformPipeline.of(List.of(Transform.resize(256))));
        assertThrows(
                IllegalArgumentException.class,
                () -> TransformPipeline.of(List.of(
                        Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD),
                        Transform.centerCrop(8))));
        assertThrows(
                IllegalArgumentException.class,
                () -> TransformPipeline.of(
                        List.of(
                                Transform.centerCrop(8),
                                Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD)),
                        OutputFormat.UINT8_HWC));
        TransformPipeline eval = TransformPipeline.imagenetEval(256, 224);
        assertEquals("image:float32[3, 224, 224]", eval.spec("image").describe());
        assertEquals(
                "image:uint8[24, 32, 3]",
                TransformPipeline.of(List.of(Transform.resize(24, 32)), OutputFormat.UINT8_HWC)
                        .spec("image")
                        .describe());
    }

    @Test
    void parsesTorchvisionSpelling() {
        List<Transform> parsed = TransformParser.parse(
                "transforms.RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(3/4, 4/3)), RandomHorizontalFlip(), Normalize(imagenet)");
        assertEquals(TransformPipeline.imagenetTrain(224).steps(), parsed);
        assertEquals(
                List.of(
                        Transform.resize(256),
                        Transform.centerCrop(224),
                        Transform.randomHorizontalFlip(0.25),
                        Transform.resize(10, 20),
                        Transform.normalize(new float[] {0.5f, 0.5f, 0.5f}, new float[] {0.25f, 0.25f, 0.25f})),
                TransformParser.parse("Resize(256), CenterCrop(224), RandomHorizontalFlip(p=0.25), Resize((10, 20)),"
                        + " Normalize(mean=[0.5, 0.5, 0.5], std=(0.25, 0.25, 0.25))"));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> TransformParser.parse("Rotate(5)"));
        assertTrue(e.getMessage().contains("RandomResizedCrop"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> TransformParser.parse("CenterCrop(224"));
    }
}
