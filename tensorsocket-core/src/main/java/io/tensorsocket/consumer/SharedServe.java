package io.tensorsocket.consumer;

import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.directory.ShareFiles;
import io.tensorsocket.directory.StartLock;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts the producer of a share unless it runs: {@code tensorsocket serve --name NAME ARGS} as a process of its own
 * (in a session of its own where {@code setsid} exists, so the caller's end, Ctrl-C or process group's kill does not
 * reach it), lingering a while after its last consumer left, and checks that a running producer of that name was
 * started with the same arguments. One caller at a time starts it: a lock file beside the producers' directories
 * decides. The launcher is {@code $TENSORSOCKET_LAUNCHER}, else {@code tensorsocket} on the PATH.
 */
public final class SharedServe {
    private final String name;
    private final List<String> serveArgs;
    private final Duration linger;

    /** The share of producer {@code name}, served by {@code serve --name name serveArgs}, staying {@code linger} idle. */
    public SharedServe(String name, List<String> serveArgs, Duration linger) {
        ProducerDirectory.checkName(name);
        for (String a : serveArgs) {
            if (a.equals("--name")
                    || a.equals("--dir")
                    || a.startsWith("--idle-timeout-s")
                    || a.startsWith("--share-key")) {
                throw new IllegalArgumentException("the serve arguments of a share may not set " + a
                        + ": the share sets" + " the name, and its linger is the idle timeout");
            }
        }
        if (linger.isNegative() || linger.isZero()) {
            throw new IllegalArgumentException("a share's linger must be positive, got " + linger);
        }
        this.name = name;
        this.serveArgs = List.copyOf(serveArgs);
        this.linger = linger;
    }

    /** What the producer's directory holds for these arguments ({@link ProducerDirectory#SHARE_FILE}). */
    public String key() {
        return String.join("\n", serveArgs);
    }

    /** Where the output of a producer a share started goes. */
    public Path logFile() {
        return ShareFiles.logFile(name);
    }

    /** Starts the producer unless one of this name runs, waiting at most {@code timeout} for it to open its socket. */
    public void ensureStarted(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Path base = ProducerDirectory.baseDirectory();
        try {
            Files.createDirectories(base);
            try (StartLock ignored = StartLock.take(ShareFiles.lockFile(name), deadline, this::tookTooLong)) {
                Path dir = ProducerDirectory.forName(name);
                if (ProducerDirectory.isLocked(dir)) {
                    return; // running, or starting: the consumer's join waits for it
                }
                Process p = start();
                while (!Files.exists(dir.resolve(ProducerDirectory.SOCKET_FILE)) || !ProducerDirectory.isLocked(dir)) {
                    if (!p.isAlive()) {
                        throw new TensorSocketException("the producer started for share '" + name + "' (serve "
                                + String.join(" ", serveArgs) + ") exited with status " + p.exitValue()
                                + " before it served:\n" + tail());
                    }
                    if (System.nanoTime() > deadline) {
                        throw new TensorSocketTimeoutException(
                                "the producer started for share '" + name + "' did not" + " open its socket within "
                                        + timeout.toSeconds() + " s; its output so far:\n" + tail());
                    }
                    Thread.sleep(20);
                }
            }
        } catch (IOException e) {
            throw new TensorSocketException("cannot start the producer of share '" + name + "': " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TensorSocketException("interrupted while starting the producer of share '" + name + "'", e);
        }
    }

    /**
     * Why the running producer {@code dir} does not serve what this share asks for, or null if it does: it was
     * started by hand, or with other serve arguments.
     */
    public String mismatch(Path dir, String sourceDescription) {
        Path file = dir.resolve(ProducerDirectory.SHARE_FILE);
        String running;
        try {
            running = Files.readString(file);
        } catch (IOException e) {
            return "it was not started by a share (it serves " + sourceDescription + ")";
        }
        if (running.equals(key())) {
            return null;
        }
        return "it was started with serve " + String.join(" ", running.split("\n")) + ", this caller asks for serve "
                + String.join(" ", serveArgs);
    }

    private TensorSocketTimeoutException tookTooLong() {
        return new TensorSocketTimeoutException("another process has been starting the producer of share '" + name
                + "' for too long; its output: " + logFile());
    }

    private Process start() throws IOException {
        List<String> cmd = new ArrayList<>();
        if (new File("/usr/bin/setsid").canExecute()) {
            cmd.add("/usr/bin/setsid");
        }
        cmd.add(launcher());
        cmd.addAll(List.of("serve", "--name", name));
        cmd.addAll(serveArgs);
        if (!serveArgs.contains("--epochs")) {
            cmd.addAll(List.of("--epochs", "0")); // a share serves until its linger runs out, not for one epoch
        }
        cmd.addAll(List.of("--idle-timeout-s", Double.toString(linger.toMillis() / 1000.0), "--share-key", key()));
        Files.writeString(
                logFile(),
                "--- started by pid " + ProcessHandle.current().pid() + ": "
                        + String.join(" ", cmd).replace('\n', ' ') + "\n",
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        return new ProcessBuilder(cmd)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()))
                .start();
    }

    private static String launcher() {
        String explicit = System.getenv("TENSORSOCKET_LAUNCHER");
        if (explicit != null && !explicit.isBlank()) {
            return explicit;
        }
        String path = System.getenv("PATH");
        for (String d : path == null ? new String[0] : path.split(File.pathSeparator)) {
            File f = new File(d, "tensorsocket");
            if (f.canExecute()) {
                return f.getPath();
            }
        }
        throw new ProducerNotFoundException("no producer runs for the share and no tensorsocket launcher was found to"
                + " start one: put bin/tensorsocket on the PATH, or set TENSORSOCKET_LAUNCHER");
    }

    private String tail() {
        try {
            List<String> lines = Files.readAllLines(logFile());
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no output: " + logFile() + ")";
        }
    }
}
