package io.tensorsocket.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.TensorProducer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class ReadmeExampleTest {

    @Test
    @Timeout(60)
    void theReadmesProducerAndConsumerRunAsWritten() throws Exception {
        String name = "readme-" + ProcessHandle.current().pid();
        try (TensorProducer p = ReadmeExample.startProducer(name)) {
            long labels = ReadmeExample.consume(name);
            assertEquals(2 * 100 * 45, labels, "every label of both epochs once: 100 of each digit per epoch");
            assertTrue(p.await(Duration.ofSeconds(30)));
        }
    }

    /** The README shows the same lines: compare them, so neither can change alone. */
    @Test
    void theReadmeShowsThisCode() throws Exception {
        String source = Files.readString(Path.of("src/test/java/io/tensorsocket/examples/ReadmeExample.java"));
        Path readme = Path.of("../README.md");
        String text = Files.readString(readme);
        for (String part : List.of("producer", "consumer")) {
            String begin = "// README " + part + " begins\n";
            String code = source.substring(
                    source.indexOf(begin) + begin.length(), source.indexOf("    // README " + part + " ends"));
            String unindented = code.lines()
                    .map(l -> l.startsWith("    ") ? l.substring(4) : l)
                    .reduce("", (a, b) -> a + b + "\n");
            assertTrue(
                    text.contains(unindented),
                    "README.md must show the " + part + " of ReadmeExample.java as is:\n" + unindented);
        }
    }
}
