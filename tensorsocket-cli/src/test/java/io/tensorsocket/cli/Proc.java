package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A real {@code tensorsocket} JVM started by a test: its stdout lines, its stderr, and signals. */
final class Proc implements AutoCloseable {
    private final Process process;
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Path stderr;
    private final Thread reader;

    private Proc(Process process, Path stderr) {
        this.process = process;
        this.stderr = stderr;
        this.reader = Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.add(l);
                }
            } catch (IOException ignored) {
                // process gone
            }
        });
    }

    /** Starts {@code tensorsocket args...} with producers living under {@code base}. */
    static Proc start(Path base, String... args) throws IOException {
        Path err = Files.createTempFile("tensorsocket-test-", ".err");
        ProcessBuilder pb = new ProcessBuilder(Launcher.javaCommand(args)).redirectError(err.toFile());
        pb.environment().put("TENSORSOCKET_BASE", base.toString());
        return new Proc(pb.start(), err);
    }

    /** Starts {@code command} (any program) with producers living under {@code base} and {@code env} added. */
    static Proc startCommand(Path base, List<String> command, Map<String, String> env) throws IOException {
        Path err = Files.createTempFile("tensorsocket-test-", ".err");
        // Started in / so that a process under another user id never depends on a private working directory.
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectError(err.toFile())
                .directory(Path.of("/").toFile());
        pb.environment().put("TENSORSOCKET_BASE", base.toString());
        pb.environment().putAll(env);
        return new Proc(pb.start(), err);
    }

    long pid() {
        return process.pid();
    }

    /** Waits for a stdout line matching {@code p}. */
    String awaitLine(Predicate<String> p, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            for (String l : lines) {
                if (p.test(l)) {
                    return l;
                }
            }
            if (!process.isAlive() && !reader.isAlive()) {
                break;
            }
            Thread.sleep(20);
        }
        return fail("no matching line within " + timeout + "; stdout " + lines + "; stderr: " + stderr());
    }

    /** Waits for the producer's ready line. */
    Proc awaitReady() throws InterruptedException {
        awaitLine(l -> l.contains("\"event\": \"ready\""), Duration.ofSeconds(30));
        return this;
    }

    /** Waits for exit and returns the exit code; fails the test if it takes longer than {@code timeout}. */
    int exitCode(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            fail("process " + process.pid() + " still running after " + timeout + "; stdout " + lines + "; stderr: "
                    + stderr());
        }
        reader.join(5000);
        return process.exitValue();
    }

    /** JSON lines printed on stdout, parsed. */
    List<Map<String, String>> json() {
        List<Map<String, String>> out = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith("{")) {
                out.add(JsonLine.parse(l));
            }
        }
        return out;
    }

    List<String> lines() {
        return List.copyOf(lines);
    }

    String stderr() {
        try {
            return Files.readString(stderr);
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /** Last line of stderr that is not a log line: the one-line error message. */
    String errorLine() {
        return stderr().lines()
                .filter(l -> l.startsWith("tensorsocket:"))
                .reduce((a, b) -> b)
                .orElse("");
    }

    void signal(String signal) throws IOException, InterruptedException {
        Process k = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                .inheritIO()
                .start();
        k.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGKILL. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    boolean isAlive() {
        return process.isAlive();
    }

    @Override
    public void close() throws IOException {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Files.deleteIfExists(stderr);
    }
}
