package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The demo end to end on a tiny image folder: both modes run, the table, chart and checks come out. */
class DemoProcessTest extends ProcessTestBase {

    @Test
    void demoRunsPrivateThenSharedThenWithTheDecodedCacheAndChecksTheBytes() throws Exception {
        var images = DemoImages.ensure(base.resolve("images"), 24, 3);
        var chart = base.resolve("demo.png");
        Proc demo = start(
                "demo",
                "--jobs",
                "2",
                "--seconds",
                "1.5",
                "--warmup-s",
                "0.5",
                "--images",
                images.toString(),
                "--batch-size",
                "8",
                "--step-ms",
                "5",
                "--transform",
                "RandomResizedCrop(64), RandomHorizontalFlip(0.5)",
                "--cache-mb",
                "64",
                "--chart",
                chart.toString());
        assertEquals(0, demo.exitCode(Duration.ofSeconds(100)), demo.lines() + demo.stderr());
        String out = String.join("\n", demo.lines());
        assertTrue(
                out.contains("private  all") && out.contains("shared   all") && out.contains("shared vs private"), out);
        assertTrue(out.contains("cached   all") && out.contains("cached vs private"), out);
        assertTrue(out.contains("checked: every job got every sample once and in order"), out);
        assertTrue(out.contains("from the shared producer, with its cache too"), out);
        assertTrue(Files.size(chart) > 1000);
        assertFalse(demo.stderr().contains("\r"), "no carriage-return redraws when stderr is not a terminal");
    }

    @Test
    void jobsCanTrainARealDjlModelInsteadOfSimulatingTheStep() throws Exception {
        var images = DemoImages.ensure(base.resolve("images"), 24, 3);
        Proc demo = start(
                "demo",
                "--jobs",
                "2",
                "--seconds",
                "1.5",
                "--warmup-s",
                "0.5",
                "--images",
                images.toString(),
                "--batch-size",
                "8",
                "--model",
                "mlp",
                "--transform",
                "RandomResizedCrop(32), RandomHorizontalFlip(0.5)",
                "--chart",
                base.resolve("model.png").toString());
        assertEquals(0, demo.exitCode(Duration.ofMinutes(2)), demo.lines() + demo.stderr());
        String out = String.join("\n", demo.lines());
        assertTrue(out.contains("a real DJL mlp training step"), out);
        assertTrue(out.contains("checked: every job got every sample once and in order"), out);
    }

    @Test
    void twoDemosStartedTogetherMakeTheirJpegsOnceAndBothCheckOut() throws Exception {
        // the same script started twice: both make the default JPEG folder at once, neither fails on the other's files
        Map<String, String> env = Map.of("XDG_CACHE_HOME", base.resolve("cache").toString());
        List<Proc> demos = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            demos.add(startCommand(
                    List.of(
                            launcherScript().toString(),
                            "demo",
                            "--jobs",
                            "1",
                            "--seconds",
                            "0.5",
                            "--warmup-s",
                            "0.2",
                            "--image-count",
                            "40",
                            "--batch-size",
                            "8",
                            "--transform",
                            "RandomResizedCrop(32)",
                            "--chart",
                            base.resolve("demo" + i + ".png").toString()),
                    env));
        }
        for (Proc demo : demos) {
            assertEquals(0, demo.exitCode(Duration.ofSeconds(100)), demo.lines() + demo.stderr());
            assertTrue(
                    String.join("\n", demo.lines()).contains("checked: every job got every sample once and in order"),
                    demo.lines().toString());
        }
        try (var jpegs = Files.walk(base.resolve("cache"))) {
            assertEquals(
                    List.of(),
                    jpegs.filter(f -> f.getFileName().toString().endsWith(".part"))
                            .toList(),
                    "half-written images left");
        }
    }

    @Test
    void anUnknownModelOrAnEmptyCacheIsRefusedInOneLineBeforeAnythingStarts() throws Exception {
        Proc model = start("demo", "--model", "resnet18");
        Proc cache = start("demo", "--cache-mb", "0");
        assertEquals(1, model.exitCode(Duration.ofSeconds(30)));
        assertTrue(model.errorLine().contains("unknown model 'resnet18': use mlp or cnn"), model.stderr());
        assertEquals(1, cache.exitCode(Duration.ofSeconds(30)));
        assertTrue(
                cache.errorLine().contains("--cache-mb takes 1 MiB or more, not 0; leave it out to compare"),
                cache.stderr());
        assertTrue(cache.lines().isEmpty(), "nothing ran: " + cache.lines());
    }
}
