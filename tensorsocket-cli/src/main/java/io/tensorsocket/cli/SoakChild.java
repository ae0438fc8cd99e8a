package io.tensorsocket.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A {@code tensorsocket} JVM started by the soak: stdout lines with arrival times, stderr in a file. */
final class SoakChild {
    final Process process;
    final Integer id;
    final Path stderr;
    final List<String> lines = new CopyOnWriteArrayList<>();
    /** Progress lines: arrival time and cumulative samples. */
    final List<long[]> progress = new CopyOnWriteArrayList<>();

    final Thread reader;
    volatile boolean stopped;
    /** Whether the soak ever stalled it: the producer may have evicted it for that (its stall timeout). */
    volatile boolean stalled;

    boolean expectedDeath;
    boolean expectProducerGone;
    int epochs;
    int batchSize;
    private volatile long exitedAt;

    SoakChild(Process process, Integer id, Path stderr) {
        this.process = process;
        this.id = id;
        this.stderr = stderr;
        this.reader = Thread.ofPlatform().daemon().start(this::read);
        process.onExit().thenRun(() -> exitedAt = System.nanoTime());
    }

    /** Where the soak's producers keep their directories, under the soak's scratch folder {@code base}. */
    static Path producers(Path base) {
        return base.resolve("producers");
    }

    static SoakChild start(Path base, Integer id, String... args) throws IOException {
        Path err = Files.createTempFile("tensorsocket-soak-", ".err");
        List<String> cmd = new ArrayList<>(Launcher.javaCommand(args));
        cmd.addAll(1, List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile());
        pb.environment().put("TENSORSOCKET_BASE", producers(base).toString());
        return new SoakChild(pb.start(), id, err);
    }

    private void read() {
        try (BufferedReader r =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String l; (l = r.readLine()) != null; ) {
                if (l.startsWith("{\"event\": \"progress\"")) {
                    progress.add(new long[] {
                        System.nanoTime(), Long.parseLong(JsonLine.parse(l).get("samples"))
                    });
                } else {
                    lines.add(l);
                }
            }
        } catch (IOException ignored) {
            // process gone
        }
    }

    String awaitLine(Predicate<String> p, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (System.nanoTime() < deadline) {
            for (String l : lines) {
                if (p.test(l)) {
                    return l;
                }
            }
            if (!process.isAlive() && !reader.isAlive()) {
                return null;
            }
            Thread.sleep(20);
        }
        return null;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    int progressCount() {
        return progress.size();
    }

    long samples() {
        return progress.isEmpty() ? 0 : progress.getLast()[1];
    }

    /** When the first progress line beyond {@code samples} arrived. */
    long progressAfter(long samples) {
        for (long[] p : progress) {
            if (p[1] > samples) {
                return p[0];
            }
        }
        return System.nanoTime();
    }

    boolean finishedEpochs() {
        return epochs > 0
                && lines.stream().filter(l -> l.startsWith("{\"epoch\"")).count() >= epochs;
    }

    long exitedAt() {
        long t = exitedAt;
        return t != 0 ? t : System.nanoTime();
    }

    synchronized void signal(String signal) throws IOException, InterruptedException {
        new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                .inheritIO()
                .start()
                .waitFor(10, TimeUnit.SECONDS);
    }

    void destroy() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    String stderrText() {
        try {
            return Files.readString(stderr);
        } catch (IOException e) {
            return "";
        }
    }

    String errorLine() {
        return stderrText()
                .lines()
                .filter(l -> l.startsWith("tensorsocket:"))
                .reduce((a, b) -> b)
                .orElse("");
    }

    void deleteFiles() {
        try {
            Files.deleteIfExists(stderr);
        } catch (IOException ignored) {
            // a temp file
        }
    }
}
