package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.opentest4j.TestAbortedException;

/**
 * Shared set-up of the multi-process tests: a private producer base under /dev/shm and cleanup of every JVM.
 * Subclasses inherit the {@code process} tag, so they run in failsafe's {@code integration-test} phase
 * ({@code ./mvnw verify}), not in the fast loop ({@code ./mvnw test}).
 */
@Tag("process")
@Timeout(120)
abstract class ProcessTestBase {
    protected Path base;
    private final List<Proc> procs = new ArrayList<>();

    @BeforeEach
    void createBase() throws IOException {
        Path shm = Path.of("/dev/shm");
        base = Files.createTempDirectory(
                Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "tensorsocket-test-");
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
        return startCommand(command, Map.of());
    }

    /** Starts an arbitrary command with {@code env} added to its environment. */
    protected Proc startCommand(List<String> command, Map<String, String> env) throws IOException {
        Proc p = Proc.startCommand(base, command, env);
        procs.add(p);
        return p;
    }

    /** A loopback TCP port free at the time of asking, for a test's Flight server. */
    protected static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The address of producer {@code name} served over Flight on loopback {@code port}. */
    protected static String uri(int port, String name) {
        return "grpc://127.0.0.1:" + port + "/" + name;
    }

    /** Waits (at most 30 s) until the producer has logged {@code consumers} joins. */
    protected static void awaitJoined(Proc producer, int consumers) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            if (producer.stderr().lines().filter(l -> l.contains(" joined at ")).count() >= consumers) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("fewer than " + consumers + " consumers joined: " + producer.stderr());
    }

    protected Proc serve(String name, String synthetic, int batchSize, int epochs, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "serve",
                "--name",
                name,
                "--synthetic",
                synthetic,
                "--batch-size",
                Integer.toString(batchSize),
                "--epochs",
                Integer.toString(epochs)));
        args.addAll(List.of(extra));
        if (!args.contains("--start-grace-ms")) {
            // Tests start their consumers themselves and wait for what they assume; the default grace would only
            // add two seconds to each. SweepStartProcessTest covers the grace.
            args.addAll(List.of("--start-grace-ms", "0"));
        }
        return start(args.toArray(String[]::new)).awaitReady();
    }

    protected Proc consume(String name, int batchSize, String... extra) throws IOException {
        List<String> args =
                new ArrayList<>(List.of("consume", "--name", name, "--batch-size", Integer.toString(batchSize)));
        args.addAll(List.of(extra));
        return start(args.toArray(String[]::new));
    }

    /** Where the Python client lives: clients/python of this checkout. */
    static Path pythonClient() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("clients/python/tensorsocket_client"))) {
                return p.resolve("clients/python");
            }
        }
        throw new AssertionError("clients/python not found above " + Path.of("").toAbsolutePath());
    }

    static final String PYTHON = "/usr/bin/python3";

    /** Whether Debian's python3 could import a statement's modules, asked once per statement in this JVM. */
    private static final Map<String, Boolean> IMPORTABLE = new ConcurrentHashMap<>();

    /**
     * Whether {@link #PYTHON} runs {@code import modules}: asked once per list in a test JVM (each ask costs a
     * Python start, and a second or more of CPU where it imports torch), the answer kept for the other tests. An ask
     * that timed out is not kept (a Python slowed by a loaded machine may answer the next time).
     */
    private static boolean importable(String modules) throws InterruptedException {
        Boolean known = IMPORTABLE.get(modules);
        if (known != null) {
            return known;
        }
        if (!Files.isExecutable(Path.of(PYTHON))) {
            IMPORTABLE.put(modules, false);
            return false;
        }
        Process p;
        try {
            p = new ProcessBuilder(PYTHON, "-c", "import " + modules)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException e) {
            IMPORTABLE.put(modules, false);
            return false;
        }
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return false;
        }
        boolean ok = p.exitValue() == 0;
        IMPORTABLE.put(modules, ok);
        return ok;
    }

    /** Skips the test unless Debian's python3 can import {@code modules}. */
    static void assumePython(String... modules) throws InterruptedException {
        boolean ok = importable(String.join(", ", modules));
        Assumptions.assumeTrue(
                ok,
                "needs " + PYTHON + " with " + String.join(", ", modules)
                        + " (apt-get install python3-numpy python3-torch)");
    }

    /** Whether Debian's python3 with numpy is there; a test that only adds Python consumers goes on without them. */
    static boolean pythonAvailable() throws Exception {
        try {
            assumePython("numpy");
            return true;
        } catch (TestAbortedException e) {
            System.out.println("SKIPPED the Python consumers of this test: " + e.getMessage());
            return false;
        }
    }

    /** Whether Debian's python3 has pyarrow (the client's dependency for grpc:// producers); says so when not. */
    static boolean pyarrowAvailable() throws Exception {
        try {
            assumePyarrow();
            return true;
        } catch (TestAbortedException e) {
            System.out.println("SKIPPED the Python remote consumers of this test: " + e.getMessage());
            return false;
        }
    }

    /** Skips the test unless Debian's python3 has numpy and pyarrow. */
    static void assumePyarrow() throws InterruptedException {
        boolean ok = importable("numpy, pyarrow.flight");
        Assumptions.assumeTrue(
                ok,
                "needs " + PYTHON + " with numpy and pyarrow (pyarrow is the"
                        + " Python client's optional dependency for grpc:// producers: " + PYTHON
                        + " -m pip install --break-system-packages pyarrow, or the wheel in /opt/pypi/files)");
    }

    private static Path launcherScript;

    /**
     * A {@code tensorsocket} launcher for the processes a test starts (a feeder that starts its producer):
     * the launcher in bin/ needs the packaged jar, which {@code verify} builds only after the tests.
     */
    static synchronized Path launcherScript() throws IOException {
        if (launcherScript == null) {
            StringBuilder line = new StringBuilder("#!/bin/sh\nexec");
            for (String a : Launcher.javaCommand()) {
                line.append(" '").append(a.replace("'", "'\\''")).append('\'');
            }
            Path p = Files.createTempFile("tensorsocket-launcher-", ".sh");
            Files.writeString(p, line.append(" \"$@\"\n").toString());
            p.toFile().setExecutable(true);
            p.toFile().deleteOnExit();
            launcherScript = p;
        }
        return launcherScript;
    }

    /** Starts {@code python3 args...} with the client on PYTHONPATH and producers under {@link #base}. */
    protected Proc startPython(Map<String, String> env, String... args) throws IOException {
        return startPython(PYTHON, env, args);
    }

    /** As {@link #startPython(Map, String...)}, with another interpreter (a virtual environment's). */
    protected Proc startPython(String python, Map<String, String> env, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(python, "-u"));
        cmd.addAll(List.of(args));
        Map<String, String> all = new HashMap<>(env);
        all.put("PYTHONPATH", pythonClient().toString());
        all.put("PYTHONDONTWRITEBYTECODE", "1");
        all.putIfAbsent("TENSORSOCKET_LAUNCHER", launcherScript().toString());
        Proc p = Proc.startCommand(base, cmd, all);
        procs.add(p);
        return p;
    }

    /** {@code python3 -m tensorsocket_client consume --name N --batch-size b extra...}. */
    protected Proc pythonConsume(String name, int batchSize, String... extra) throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "-m", "tensorsocket_client", "consume", "--name", name, "--batch-size", Integer.toString(batchSize)));
        args.addAll(List.of(extra));
        return startPython(Map.of(), args.toArray(String[]::new));
    }

    /**
     * Asserts one epoch line is an exact, complete epoch of {@code samples}, from an epoch start or, where the producer
     * chooses the order, from mid-epoch ({@code exact}).
     */
    static void assertExactEpoch(Map<String, String> line, long samples) {
        String start = line.get("start");
        assertTrue("epoch_start".equals(start) || "exact".equals(start), line.toString());
        assertExactEpoch(line, samples, start);
    }

    /** Asserts one epoch line is an exact, complete epoch of {@code samples} that started as {@code start} says. */
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
