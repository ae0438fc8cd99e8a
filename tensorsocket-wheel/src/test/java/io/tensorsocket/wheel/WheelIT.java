package io.tensorsocket.wheel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The {@code tensorsocket} wheel as a PyTorch user meets it: installed with pip into a fresh virtual environment
 * on a machine where no Java can be found (no {@code JAVA_HOME}, no {@code java} on PATH), then a feeder and two
 * consumers started together, the demo, the commands the wheel leaves out, and a damaged runtime. The tests run side
 * by side: each reads the one installation, and one that damages a runtime installs a copy of its own.
 */
@Execution(ExecutionMode.CONCURRENT)
@Tag("process")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WheelIT {
    private static final Pattern WHEEL =
            Pattern.compile("tensorsocket-[0-9][^-]*-py3-none-manylinux_2_28_x86_64\\.whl");
    private final Path work =
            Path.of(System.getProperty("wheel.work", "target/it")).toAbsolutePath();
    private final Path python = Path.of(System.getProperty("wheel.python", "/usr/bin/python3"));
    private Path wheel;
    private Path venv;
    private Path base;

    @BeforeAll
    void install() throws Exception {
        Path dist = Path.of(System.getProperty("wheel.dist", "../dist"));
        Files.createDirectories(dist);
        try (Stream<Path> s = Files.list(dist)) {
            List<Path> wheels = s.filter(
                            p -> WHEEL.matcher(p.getFileName().toString()).matches())
                    .toList();
            if (wheels.isEmpty() && !"1".equals(System.getenv("TENSORSOCKET_WHEEL_REQUIRED"))) {
                // the build said why it built none ("SKIPPED the pip wheel: ...")
                System.out.println("SKIPPED WheelIT: no wheel in " + dist
                        + "; the build's line 'SKIPPED the pip wheel' says what to install");
                Assumptions.abort("no wheel was built");
            }
            assertEquals(1, wheels.size(), "one platform wheel in " + dist + ", found " + wheels);
            wheel = wheels.getFirst();
        }
        delete(work);
        Files.createDirectories(work);
        base = Files.createTempDirectory(Path.of("/dev/shm"), "tensorsocket-wheel-it-");
        venv = work.resolve("env");
        // System site packages for numpy and torch (Debian's); none of them is a Java.
        ok(run(List.of(python.toString(), "-m", "venv", "--system-site-packages", venv.toString()), Map.of(), 120));
        ok(run(
                List.of(pip(), "install", "-q", "--no-index", "--disable-pip-version-check", wheel.toString()),
                Map.of(),
                300));
    }

    @AfterAll
    void cleanUp() throws IOException {
        delete(base);
    }

    @Test
    void theWheelIsForLinuxX8664AndPipRefusesItElsewhere() throws Exception {
        Result elsewhere = run(
                List.of(
                        pip(),
                        "install",
                        "--dry-run",
                        "--no-deps",
                        "--no-index",
                        "--disable-pip-version-check",
                        "--only-binary=:all:",
                        "--platform",
                        "macosx_11_0_arm64",
                        "--target",
                        work.resolve("t1").toString(),
                        wheel.toString()),
                Map.of(),
                120);
        assertNotEquals(0, elsewhere.code(), elsewhere.toString());
        assertTrue(elsewhere.stderr().contains("is not a supported wheel on this platform"), elsewhere.toString());
        Result here = run(
                List.of(
                        pip(),
                        "install",
                        "--dry-run",
                        "--no-deps",
                        "--no-index",
                        "--disable-pip-version-check",
                        "--only-binary=:all:",
                        "--platform",
                        "manylinux_2_28_x86_64",
                        "--target",
                        work.resolve("t2").toString(),
                        wheel.toString()),
                Map.of(),
                120);
        ok(here);
    }

    @Test
    void withNoJavaAnywhereTheBundledRuntimeRuns() throws Exception {
        assertFalse(Files.exists(venv.resolve("bin/java")));
        Result r = ok(run(List.of(script(), "--version"), Map.of(), 60));
        assertTrue(r.stdout().startsWith("tensorsocket "), r.toString());
        assertTrue(
                r.stdout().contains("at " + bundle().resolve("java") + ", bundled with the tensorsocket wheel"),
                r.toString());
        assertTrue(r.stdout().contains("(DJL with PyTorch): not installed"), r.toString());
    }

    @Test
    void theReferencesImportPathsComeWithTheWheel() throws Exception {
        Result r = ok(run(List.of(venv.resolve("bin/python").toString(), "-c", """
                        import tensorsocket, tensorsocket_client
                        from tensorsocket.producer import TensorProducer
                        from tensorsocket.consumer import TensorConsumer
                        assert TensorProducer is tensorsocket_client.TensorProducer
                        assert TensorConsumer is tensorsocket_client.TensorConsumer
                        print(tensorsocket.__file__)
                        """), Map.of(), 60));
        assertTrue(r.stdout().strip().startsWith(venv.toString()), "the installed package: " + r);
    }

    @Test
    void aJavaHomeOfJava25WinsAndAnOlderOneIsPassedOverSayingSo() throws Exception {
        String jdk = System.getProperty("java.home"); // this test's JVM: 25 or newer, as the build requires
        Result chosen = ok(run(List.of(script(), "--version"), Map.of("JAVA_HOME", jdk), 60));
        assertTrue(chosen.stdout().contains("at " + jdk + ", chosen by JAVA_HOME"), chosen.toString());
        Path old = work.resolve("jdk-17");
        Files.createDirectories(old.resolve("bin"));
        Files.writeString(old.resolve("release"), "JAVA_VERSION=\"17.0.15\"\n");
        Result passed = ok(run(List.of(script(), "--version"), Map.of("JAVA_HOME", old.toString()), 60));
        assertTrue(passed.stdout().contains("bundled with the tensorsocket wheel"), passed.toString());
        assertTrue(
                passed.stderr().contains("JAVA_HOME=" + old + " holds Java 17; the producer needs 25 or newer"),
                passed.toString());
    }

    /** As {@code env/bin/python train.py} without activating the environment: the client finds the bundle itself. */
    @Test
    void aFeederAndTwoConsumersStartedTogetherReadEveryEpochWhole() throws Exception {
        String py = venv.resolve("bin/python").toString();
        int samples = 3000;
        List<Process> all = new ArrayList<>();
        Path out = Files.createDirectories(work.resolve("e2e"));
        Map<String, String> notOnPath = Map.of("PATH", out.toString()); // neither java nor the tensorsocket script
        all.add(start(
                List.of(
                        py,
                        "-m",
                        "tensorsocket_client",
                        "feed",
                        "--name",
                        "wheelfeed",
                        "--synthetic",
                        "samples=" + samples + ",shape=3x8x8,dtype=float32,seed=5",
                        "--batch-size",
                        "50",
                        "--epochs",
                        "2",
                        "--min-consumers",
                        "2"),
                notOnPath,
                out.resolve("feeder")));
        for (int i = 0; i < 2; i++) {
            all.add(start(
                    List.of(
                            py,
                            "-m",
                            "tensorsocket_client",
                            "consume",
                            "--name",
                            "wheelfeed",
                            "--batch-size",
                            Integer.toString(32 + 32 * i)),
                    notOnPath,
                    out.resolve("consumer" + i)));
        }
        try {
            Path producerExe = awaitProducerExe("wheelfeed");
            assertTrue(producerExe.startsWith(bundle().resolve("java")), "the producer runs on " + producerExe);
            for (int i = 0; i < all.size(); i++) {
                Process p = all.get(i);
                assertTrue(p.waitFor(180, TimeUnit.SECONDS), "process " + i + " still running");
                String log = Files.readString(out.resolve((i == 0 ? "feeder" : "consumer" + (i - 1)) + ".err"));
                assertEquals(0, p.exitValue(), log);
            }
            for (int i = 0; i < 2; i++) {
                List<String> epochs = Files.readAllLines(out.resolve("consumer" + i + ".out")).stream()
                        .filter(l -> l.contains("\"epoch\""))
                        .toList();
                assertEquals(2, epochs.size(), epochs.toString());
                for (String e : epochs) {
                    for (String field : List.of(
                            "\"samples\": " + samples,
                            "\"expected\": " + samples,
                            "\"unique\": " + samples,
                            "\"duplicates\": 0",
                            "\"corrupt\": 0")) {
                        assertTrue(e.contains(field), field + " in " + e);
                    }
                }
            }
        } finally {
            all.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void theDemoRunsFromTheWheel() throws Exception {
        Path home = Files.createDirectories(work.resolve("demo-home"));
        Result r = run(
                List.of(
                        script(),
                        "demo",
                        "--seconds",
                        "1.5",
                        "--chart",
                        home.resolve("demo.png").toString()),
                Map.of("HOME", home.toString()),
                300);
        ok(r);
        assertTrue(Files.size(home.resolve("demo.png")) > 0, r.toString());
    }

    @Test
    void commandsThatNeedWhatTheWheelLeavesOutSayWhatToInstall() throws Exception {
        for (List<String> args : List.of(
                List.of("train", "--name", "nothing", "--batch-size", "8"),
                List.of("demo", "--model", "mlp", "--seconds", "1"))) {
            List<String> cmd = new ArrayList<>(List.of(script()));
            cmd.addAll(args);
            Result r = run(cmd, Map.of(), 60);
            assertEquals(1, r.code(), r.toString());
            assertTrue(
                    r.stderr().contains("which this installation does not carry (the pip wheel holds the producer"),
                    r.toString());
            assertTrue(r.stderr().contains("./mvnw -DskipTests package"), r.toString());
            assertFalse(r.stderr().contains("NoClassDefFound") || r.stderr().contains("Exception"), r.toString());
        }
    }

    @Test
    void aDamagedRuntimeFailsSayingWhichFileAndHowToReinstall() throws Exception {
        Path target = work.resolve("damaged");
        ok(run(
                List.of(
                        pip(),
                        "install",
                        "-q",
                        "--no-deps",
                        "--no-index",
                        "--disable-pip-version-check",
                        "--target",
                        target.toString(),
                        wheel.toString()),
                Map.of(),
                300));
        List<String> version = List.of(venv.resolve("bin/python").toString(), "-m", "tensorsocket_bundle", "--version");
        Map<String, String> env = Map.of("PYTHONPATH", target.toString());
        ok(run(version, env, 60));
        Path jar =
                target.resolve("tensorsocket_bundle/lib").resolve(firstJar(target.resolve("tensorsocket_bundle/lib")));
        try (RandomAccessFile f = new RandomAccessFile(jar.toFile(), "rw")) {
            f.seek(f.length() / 2); // the same size, other bytes: what only the hashes --version checks can see
            int b = f.read();
            f.seek(f.length() / 2);
            f.write(b ^ 0xFF);
        }
        Result flipped = run(version, env, 60);
        assertEquals(1, flipped.code(), flipped.toString());
        assertTrue(
                flipped.stderr()
                        .contains("are damaged: lib/" + jar.getFileName() + " has other bytes than the wheel's"),
                flipped.toString());
        assertTrue(flipped.stderr().contains("pip install --force-reinstall"), flipped.toString());

        Path modules = target.resolve("tensorsocket_bundle/java/lib/modules");
        long size = Files.size(modules);
        try (RandomAccessFile f = new RandomAccessFile(modules.toFile(), "rw")) {
            f.setLength(size / 3); // a cut copy: every start sees it
        }
        Result cut = run(List.of(venv.resolve("bin/python").toString(), "-m", "tensorsocket_bundle", "list"), env, 60);
        assertEquals(1, cut.code(), cut.toString());
        assertTrue(cut.stderr().contains("java/lib/modules has " + size / 3 + " bytes, not " + size), cut.toString());
        // and a feeder that would start it says so instead of waiting for a producer that cannot come
        Result feeder = run(
                List.of(
                        venv.resolve("bin/python").toString(),
                        "-m",
                        "tensorsocket_client",
                        "feed",
                        "--name",
                        "damagedfeed",
                        "--synthetic",
                        "samples=100,shape=4,dtype=float32,seed=1",
                        "--batch-size",
                        "10"),
                Map.of("PYTHONPATH", target.toString(), "PATH", work.toString()),
                60);
        assertEquals(1, feeder.code(), feeder.toString());
        assertTrue(
                feeder.stderr().contains("cannot start a producer for 'damagedfeed'")
                        && feeder.stderr().contains("java/lib/modules has"),
                feeder.toString());
    }

    private static String firstJar(Path lib) throws IOException {
        try (Stream<Path> s = Files.list(lib)) {
            return s.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("tensorsocket-core"))
                    .findFirst()
                    .orElseThrow();
        }
    }

    private Path bundle() throws IOException {
        try (Stream<Path> s = Files.list(venv.resolve("lib"))) {
            return s.findFirst()
                    .orElseThrow()
                    .resolve("site-packages/tensorsocket_bundle")
                    .toRealPath();
        }
    }

    /** The executable of the producer serving {@code name}, from /proc, once it is up (or fails after 60 s). */
    private Path awaitProducerExe(String name) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            for (ProcessHandle h : ProcessHandle.allProcesses().toList()) {
                String line = String.join(" ", h.info().arguments().orElse(new String[0]));
                if (line.contains("io.tensorsocket.cli.Main serve --name " + name + " ")) {
                    return Path.of("/proc", Long.toString(h.pid()), "exe").toRealPath();
                }
            }
            Thread.sleep(50);
        }
        return fail("no producer serving '" + name + "' appeared within 60 s");
    }

    private String pip() {
        return venv.resolve("bin/pip").toString();
    }

    private String script() {
        return venv.resolve("bin/tensorsocket").toString();
    }

    record Result(List<String> command, int code, String stdout, String stderr) {
        @Override
        public String toString() {
            return String.join(" ", command) + " exited " + code + "\nstdout: " + stdout + "\nstderr: " + stderr;
        }
    }

    private static Result ok(Result r) {
        assertEquals(0, r.code(), r.toString());
        return r;
    }

    /**
     * Starts {@code command} as on a machine without Java: an environment of HOME, a PATH of the venv's bin only,
     * the producers' base, and {@code env}; stdout and stderr to {@code logs}.out and .err.
     */
    private Process start(List<String> command, Map<String, String> env, Path logs) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(work.toFile())
                .redirectOutput(Path.of(logs + ".out").toFile())
                .redirectError(Path.of(logs + ".err").toFile());
        Map<String, String> e = pb.environment();
        e.clear();
        e.put("HOME", work.toString());
        e.put("PATH", venv.resolve("bin").toString());
        e.put("LANG", "C.UTF-8");
        e.put("TENSORSOCKET_BASE", base.toString());
        e.putAll(env);
        return pb.start();
    }

    private Result run(List<String> command, Map<String, String> env, int timeoutS) throws Exception {
        Path logs = Files.createTempFile(work, "run-", "");
        Process p = start(command, env, logs);
        if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not end within " + timeoutS + " s; stderr: "
                    + Files.readString(Path.of(logs + ".err")));
        }
        return new Result(
                command,
                p.exitValue(),
                Files.readString(Path.of(logs + ".out"), StandardCharsets.UTF_8),
                Files.readString(Path.of(logs + ".err"), StandardCharsets.UTF_8));
    }

    private static void delete(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
