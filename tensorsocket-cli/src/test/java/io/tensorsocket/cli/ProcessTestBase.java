package io.tensorsocket.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Shared set-up of the multi-process tests: a private producer base under /dev/shm and cleanup of every JVM. */
@Timeout(120)
abstract class ProcessTestBase {
    protected Path base;
    private final List<Proc> procs = new ArrayList<>();

    @BeforeEach
    void createBase() throws IOException {
        Path shm = Path.of("/dev/shm");
        base = Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")),
                "tensorsocket-test-");
    }

    @AfterEach
    void cleanUp() throws IOException {
        for (Proc p : procs) {
            p.close();
        }
        if (Files.exists(base)) {
            try (Stream<Path> s = Files.walk(base)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    protected Proc start(String... args) throws IOException {
        Proc p = Proc.start(base, args);
        procs.add(p);
        return p;
    }

    /** Starts an arbitrary command; it is killed at the end of the test like the others. */
    protected Proc startCommand(List<String> command) throws IOException {
        Proc p = Proc.startCommand(base, command);
        procs.add(p);
        return p;
    }

    protected Proc serve(String name, String synthetic, int batchSize, int epochs, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("serve", "--name", name, "--synthetic", synthetic,
                "--batch-size", Integer.toString(batchSize), "--epochs", Integer.toString(epochs)));
        args.addAll(List.of(extra));
        return start(args.toArray(String[]::new)).awaitReady();
    }

    protected Proc consume(String name, int batchSize, String... extra) throws IOException {
        List<String> args = new ArrayList<>(List.of("consume", "--name", name, "--batch-size", Integer.toString(batchSize)));
        args.addAll(List.of(extra));
        return start(args.toArray(String[]::new));
    }

    /** Asserts one epoch line is an exact, complete epoch of {@code samples}. */
    static void assertExactEpoch(Map<String, String> line, long samples, String start) {
        assertEquals(Long.toString(samples), line.get("samples"), line.toString());
        assertEquals(Long.toString(samples), line.get("unique"), line.toString());
        assertEquals("0", line.get("duplicates"), line.toString());
        assertEquals("0", line.get("corrupt"), line.toString());
        assertEquals("0", line.get("out_of_order"), line.toString());
        assertEquals("true", line.get("complete"), line.toString());
        assertEquals(start, line.get("start"), line.toString());
    }
}
