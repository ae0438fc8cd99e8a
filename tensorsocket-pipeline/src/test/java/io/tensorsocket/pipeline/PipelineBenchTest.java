package io.tensorsocket.pipeline;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pipeline benchmark runs as its documentation launches it (a JVM of its own), briefly, and prints every figure:
 * each decoder's rates, the cache's epochs with the short side it keeps, and the three augmentations side by side.
 */
class PipelineBenchTest {
    @TempDir
    Path tmp;

    @Test
    void aShortRunPrintsEveryFigureAndTheCachesShortSide() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(
                        java.toString(),
                        "--enable-native-access=ALL-UNNAMED",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        PipelineBench.class.getName(),
                        "--dir",
                        tmp.resolve("jpegs").toString(),
                        "--images",
                        "12",
                        "--seconds",
                        "0.2",
                        "--threads",
                        "1",
                        "--decoders",
                        "imageio",
                        "--cache-resize",
                        "96")
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("12 JPEGs 500x375 in " + tmp.resolve("jpegs")), out);
        assertTrue(Pattern.compile("(?m)^imageio\\s+1\\s+\\d+").matcher(out).find(), out);
        Matcher cache = Pattern.compile(
                        "cache, 1 thread\\(s\\): epoch 0 \\(decode \\+ augment\\) (\\d+) images/s.* epochs 1\\+ \\(augment"
                                + " only\\) (\\d+) images/s.* 12 images kept shrunk to a short side of 96, .* process RSS"
                                + " (\\d+) MiB")
                .matcher(out);
        assertTrue(cache.find(), out);
        for (String figure : List.of(cache.group(1), cache.group(2), cache.group(3))) {
            assertTrue(Long.parseLong(figure) > 0, out);
        }
        assertTrue(out.contains("three augmentations (crop scale (0.08,1), (0.3,1), (0.6,1))"), out);
    }

    @Test
    void anUnknownOptionIsRefusedSayingWhichOnesThereAre() throws Exception {
        Exception e = assertThrows(
                IllegalArgumentException.class, () -> PipelineBench.main(new String[] {"--cache-mib", "9"}));
        assertTrue(e.getMessage().contains("unknown option --cache-mib; use --dir DIR"), e.getMessage());
        assertTrue(e.getMessage().contains("--cache-resize S"), e.getMessage());
    }
}
