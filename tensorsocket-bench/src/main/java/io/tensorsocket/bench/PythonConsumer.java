package io.tensorsocket.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Python benchmark consumer ({@code clients/python/examples/bench_consumer.py}, BenchConsumer's twin) of the
 * checkout this build lies in, run by {@code $TENSORSOCKET_PYTHON} (default {@code /usr/bin/python3}, which needs
 * numpy), so that the harness measures Python consumers beside Java ones on the same producer.
 */
final class PythonConsumer {
    static final String SCRIPT = "clients/python/examples/bench_consumer.py";

    private PythonConsumer() {}

    /** Why no Python consumer can run here, or null if one can. */
    static String unavailable() {
        Path client = client();
        if (client == null) {
            return "no " + SCRIPT + " above " + location() + " or the working directory (a bench run outside the"
                    + " project's checkout)";
        }
        try {
            Process p = new ProcessBuilder(python(), "-c", "import numpy")
                    .redirectErrorStream(true)
                    .start();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                return python() + " cannot import numpy (set TENSORSOCKET_PYTHON to a Python that has it)";
            }
        } catch (IOException e) {
            return "no " + python() + " (" + e.getMessage() + "; set TENSORSOCKET_PYTHON)";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
        return null;
    }

    /** Starts one consumer of the producer in {@code dir}; stdout carries its RESULT line, stderr is shared. */
    static Process start(Path dir, int batchSize, int epochs, int warmup, long spinMicros, boolean ring)
            throws IOException {
        Path root = client();
        if (root == null) {
            throw new IllegalStateException(unavailable());
        }
        List<String> cmd = new ArrayList<>(List.of(
                python(),
                root.resolve(SCRIPT).toString(),
                dir.toString(),
                Integer.toString(batchSize),
                Integer.toString(epochs),
                Integer.toString(warmup),
                Long.toString(spinMicros),
                ring ? "ring" : "socket"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("PYTHONPATH", root.resolve("clients/python").toString());
        return pb.start();
    }

    private static String python() {
        String p = System.getenv("TENSORSOCKET_PYTHON");
        return p == null || p.isBlank() ? "/usr/bin/python3" : p;
    }

    private static Path location() {
        try {
            return Path.of(PythonConsumer.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI());
        } catch (Exception e) {
            return Path.of("").toAbsolutePath();
        }
    }

    /**
     * The checkout's root: the first folder above this class's jar or classes (bin/tensorsocket's), else above the
     * working directory (a build that took this module from the local repository), that holds the script.
     */
    private static Path client() {
        for (Path start : List.of(location(), Path.of("").toAbsolutePath())) {
            for (Path p = start; p != null; p = p.getParent()) {
                if (Files.isRegularFile(p.resolve(SCRIPT))) {
                    return p;
                }
            }
        }
        return null;
    }
}
