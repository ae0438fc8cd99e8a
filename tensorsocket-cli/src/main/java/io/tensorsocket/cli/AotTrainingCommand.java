package io.tensorsocket.cli;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.tensorsocket.directory.ProducerDirectory;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;

/**
 * {@code tensorsocket aot-training} (hidden): the training run of the command line's ahead-of-time cache. It runs,
 * in this one JVM, what the processes users start run: a producer ({@code serve}) and a consumer of each hand-off
 * ({@code consume}, ring and socket), a {@code status} and a {@code list}, on a small synthetic stream in a base
 * directory of its own, removed at the end. A JVM started with {@code -XX:AOTMode=record} records the classes
 * they load and link and the methods' profiles; {@code bin/tensorsocket} and the wheel's launcher start from that
 * cache (made from that record by {@code -XX:AOTMode=create} in the build), so a producer or consumer starts with
 * its classes already loaded and linked.
 *
 * <p>Its output is not for users: it exits 0 when every part ran cleanly, else 1 naming the part.
 */
@Command(name = "aot-training", hidden = true, description = "The training run of the ahead-of-time cache.")
final class AotTrainingCommand implements Callable<Integer> {

    private static final String SYNTHETIC = "samples=2048,shape=3x32x32,dtype=float32,seed=3";

    @Override
    public Integer call() throws Exception {
        Path base = Files.createTempDirectory(shmOrTmp(), "tensorsocket-aot-");
        String previous = System.getProperty("tensorsocket.base");
        System.setProperty("tensorsocket.base", base.toString());
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        System.setOut(new PrintStream(OutputStream.nullOutputStream(), true, UTF_8));
        System.setErr(new PrintStream(said, true, UTF_8)); // the producer's log, shown only if a part fails
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<Integer> serve = pool.submit(() -> Main.run(
                    "serve",
                    "--name",
                    "train",
                    "--synthetic",
                    SYNTHETIC,
                    "--batch-size",
                    "64",
                    "--epochs",
                    "0",
                    "--min-consumers",
                    "2",
                    "--start-grace-ms",
                    "0",
                    "--idle-timeout-s",
                    "1"));
            List<Future<Integer>> consumers = new ArrayList<>();
            for (String handoff : List.of("ring", "socket")) {
                consumers.add(pool.submit(() -> Main.run(
                        "consume",
                        "--name",
                        "train",
                        "--batch-size",
                        "48",
                        "--epochs",
                        "3",
                        "--step-ms",
                        "1",
                        "--handoff",
                        handoff,
                        "--connect-timeout-s",
                        "30")));
            }
            List<String> failed = new ArrayList<>();
            Path socket = base.resolve("train").resolve(ProducerDirectory.SOCKET_FILE);
            for (int i = 0; i < 3000 && !Files.exists(socket); i++) {
                Thread.sleep(10);
            }
            if (Main.run("status", "train", "--once", "--json", "--timeout-s", "30") != 0) {
                failed.add("status");
            }
            for (Future<Integer> c : consumers) {
                if (c.get(60, TimeUnit.SECONDS) != 0) {
                    failed.add("consume");
                }
            }
            if (serve.get(60, TimeUnit.SECONDS) != 0) {
                failed.add("serve");
            }
            if (Main.run("list") != 0) {
                failed.add("list");
            }
            System.setOut(out);
            System.setErr(err);
            if (!failed.isEmpty()) {
                err.print(said.toString(UTF_8));
                System.err.println("tensorsocket: error: the AOT training run's " + failed + " failed (see above)");
                return 1;
            }
            return 0;
        } finally {
            System.setOut(out);
            System.setErr(err);
            pool.shutdownNow();
            if (previous == null) {
                System.clearProperty("tensorsocket.base");
            } else {
                System.setProperty("tensorsocket.base", previous);
            }
            removeTree(base);
        }
    }

    private static Path shmOrTmp() {
        Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
    }

    private static void removeTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
