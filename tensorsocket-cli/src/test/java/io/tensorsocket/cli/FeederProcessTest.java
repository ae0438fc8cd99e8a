package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A Python feeder (a torch DataLoader, or the synthetic feed command) filling an external Java producer. */
@Timeout(180)
class FeederProcessTest extends ProcessTestBase {

    private Proc serveExternal(String name, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("serve", "--name", name, "--external"));
        args.addAll(List.of(extra));
        Proc p = start(args.toArray(String[]::new));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!Files.exists(base.resolve(name).resolve("feeder.sock"))) {
            assertTrue(System.nanoTime() < deadline && p.isAlive(), "no feeder socket: " + p.stderr());
            Thread.sleep(20);
        }
        return p;
    }

    private Proc feedTorch(String name, String spec, int batchSize, int epochs, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                pythonClient().resolve("examples/feed_torch.py").toString(),
                "--name",
                name,
                "--synthetic",
                spec,
                "--batch-size",
                Integer.toString(batchSize),
                "--epochs",
                Integer.toString(epochs)));
        args.addAll(List.of(extra));
        return startPython(Map.of("OMP_NUM_THREADS", "1"), args.toArray(String[]::new));
    }

    @Test
    void aTorchDataLoaderFeedsOneJavaAndTwoPythonConsumersExactlyOverTwoEpochs() throws Exception {
        assumePython("numpy", "torch");
        int samples = 1500;
        String spec = "samples=" + samples + ",shape=3x8x8,dtype=float32,seed=11";
        Proc producer = serveExternal("torchfeed", "--min-consumers", "3");
        // Consumers that come before the feeder wait for it.
        List<Proc> consumers = List.of(consume("torchfeed", 37, "--connect-timeout-s", "60"));
        Proc feeder = feedTorch("torchfeed", spec, 64, 2);
        producer.awaitReady();
        consumers = List.of(consumers.getFirst(), pythonConsume("torchfeed", 64), pythonConsume("torchfeed", 100));
        for (Proc c : consumers) {
            assertEquals(0, c.exitCode(Duration.ofMinutes(2)), c.stderr());
            List<Map<String, String>> epochs = c.json();
            assertEquals(2, epochs.size(), c.lines().toString());
            for (int e = 0; e < 2; e++) {
                assertEquals(Integer.toString(e), epochs.get(e).get("epoch"));
                assertExactEpoch(epochs.get(e), samples, "epoch_start");
            }
        }
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(30)), feeder.stderr());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
    }

    @Test
    void theSyntheticFeedVerifiesInJavaAndPythonAndALateConsumerJoins() throws Exception {
        assumePython("numpy");
        int samples = 2000;
        Proc producer = serveExternal("synfeed");
        Proc feeder = startPython(
                Map.of(),
                "-m",
                "tensorsocket_client",
                "feed",
                "--name",
                "synfeed",
                "--synthetic",
                "samples=" + samples + ",shape=16,dtype=int32,seed=4",
                "--batch-size",
                "50",
                "--epochs",
                "5",
                "--no-start");
        producer.awaitReady();
        Proc first =
                consume("synfeed", 64, "--step-ms", "100"); // about 3 s per epoch: the late one comes during epoch 1
        first.awaitLine(l -> l.contains("\"epoch\": 0"), Duration.ofSeconds(60));
        Proc late = pythonConsume("synfeed", 30);
        assertEquals(0, first.exitCode(Duration.ofMinutes(2)), first.stderr());
        // a feed in its own order: the late one rolls, and its last epoch, cut by the stream's end, says so
        assertEquals(1, late.exitCode(Duration.ofMinutes(2)), late.stderr());
        assertTrue(late.stderr().contains("samples short of this consumer's epoch"), late.stderr());
        for (Proc c : List.of(first, late)) {
            for (Map<String, String> e : c.json()) {
                assertEquals("0", e.get("corrupt"), e.toString());
                assertEquals("0", e.get("out_of_order"), e.toString());
            }
        }
        first.json().forEach(e -> assertExactEpoch(e, samples, "epoch_start"));
        assertEquals(5, first.json().size());
        // It joined late: its epochs are windows of the stream from where it joined, intact and in order.
        List<Map<String, String>> lateEpochs = late.json();
        assertTrue(lateEpochs.size() >= 1 && lateEpochs.size() <= 4, lateEpochs.toString());
        assertEquals("rolling", lateEpochs.getFirst().get("start"), lateEpochs.toString());
        assertEquals(Integer.toString(samples), lateEpochs.getFirst().get("samples"), lateEpochs.toString());
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(30)), feeder.stderr());
    }

    @Test
    void aFeederKilledMidEpochFailsEveryConsumerWithItsPid() throws Exception {
        assumePython("numpy");
        Proc producer = serveExternal("killfeed", "--min-consumers", "2");
        Proc feeder = startPython(
                Map.of(),
                "-m",
                "tensorsocket_client",
                "feed",
                "--name",
                "killfeed",
                "--synthetic",
                "samples=100000,shape=64,dtype=float32,seed=4",
                "--batch-size",
                "20",
                "--epochs",
                "2",
                "--no-start");
        producer.awaitReady();
        Proc java = consume("killfeed", 32, "--step-ms", "2");
        Proc python = pythonConsume("killfeed", 25, "--step-ms", "2");
        awaitJoined(producer, 2); // on a loaded machine a consumer's start alone can take seconds
        Thread.sleep(1000); // batches are flowing
        assertTrue(java.isAlive() && python.isAlive(), java.stderr() + python.stderr());
        long killedAt = System.nanoTime();
        feeder.kill();
        for (Proc c : List.of(java, python)) {
            assertNotEquals(0, c.exitCode(Duration.ofSeconds(15)));
            assertTrue(c.errorLine().contains("feeder of producer 'killfeed' (pid " + feeder.pid()), c.stderr());
            assertTrue(c.errorLine().contains("disconnected in epoch 0"), c.errorLine());
        }
        assertTrue((System.nanoTime() - killedAt) / 1e9 < 15);
        assertNotEquals(0, producer.exitCode(Duration.ofSeconds(30)));
    }

    @Test
    void aFeederThatPublishesMoreThanItDeclaredOrChangesAShapeFailsTheConsumersWithTheReason() throws Exception {
        assumePython("numpy", "torch");
        String spec = "samples=300,shape=4,dtype=float32,seed=2";
        serveExternal("morefeed");
        Proc feeder = feedTorch("morefeed", spec, 50, 1, "--break-after", "0", "--break-how", "more");
        Proc c = consume("morefeed", 50, "--connect-timeout-s", "60");
        assertNotEquals(0, c.exitCode(Duration.ofSeconds(60)));
        assertTrue(c.errorLine().contains("more than the 299 per epoch it declared"), c.stderr());
        assertNotEquals(0, feeder.exitCode(Duration.ofSeconds(30)));

        serveExternal("shapefeed");
        Proc shaped = feedTorch("shapefeed", spec, 50, 1, "--break-after", "2", "--break-how", "shape");
        Proc c2 = pythonConsume("shapefeed", 50, "--connect-timeout-s", "60");
        assertNotEquals(0, c2.exitCode(Duration.ofSeconds(60)));
        assertTrue(c2.errorLine().contains("tensor 'data' changed in epoch 0"), c2.stderr());
        assertTrue(c2.errorLine().contains("pid " + shaped.pid()), c2.stderr());
        assertNotEquals(0, shaped.exitCode(Duration.ofSeconds(30)));
    }

    @Test
    void aLoaderThatFailsOnItsFirstBatchFailsTheConsumersLaunchedWithItWithTheLoadersException() throws Exception {
        assumePython("numpy", "torch");
        String feed = """
                from torch.utils.data import DataLoader, Dataset
                from tensorsocket_client import TensorProducer
                class Truncated(Dataset):
                    def __len__(self): return 100
                    def __getitem__(self, i): raise ValueError("cannot decode sample %d: truncated file" % i)
                TensorProducer("firstfail", DataLoader(Truncated(), batch_size=10), epochs=1).run()
                """;
        // As users launch them: the consumers and the feeder (which starts the producer) in the same second.
        List<Proc> consumers = List.of(consume("firstfail", 10), pythonConsume("firstfail", 10));
        Proc feeder = startPython(Map.of("OMP_NUM_THREADS", "1"), "-c", feed);
        assertNotEquals(0, feeder.exitCode(Duration.ofSeconds(90)), feeder.stderr());
        for (Proc c : consumers) {
            assertNotEquals(0, c.exitCode(Duration.ofSeconds(30)), c.stderr());
            assertTrue(c.stderr().contains("producer 'firstfail' failed before it served: "), c.stderr());
            assertTrue(
                    c.stderr()
                            .contains("the loader raised ValueError: cannot decode sample 0: truncated file (<string>:5"
                                    + " in __getitem__, sample index 0) while loading batch 0 of epoch 0"),
                    c.stderr());
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (Files.exists(base.resolve("firstfail")) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertFalse(Files.exists(base.resolve("firstfail")), "the failed producer's directory stayed");
    }

    @Test
    void aSecondFeederIsRefused() throws Exception {
        assumePython("numpy");
        Proc producer = serveExternal("twofeed");
        String[] feed = {
            "-m",
            "tensorsocket_client",
            "feed",
            "--name",
            "twofeed",
            "--synthetic",
            "samples=1000,shape=4,dtype=float32,seed=1",
            "--batch-size",
            "10",
            "--no-start"
        };
        startPython(Map.of(), feed);
        producer.awaitReady();
        Proc second = startPython(Map.of(), feed);
        assertNotEquals(0, second.exitCode(Duration.ofSeconds(30)));
        assertTrue(second.errorLine().contains("already has a feeder"), second.stderr());
    }

    @Test
    void aPlainTorchTrainingLoopReadsTwoEpochsThroughTheDataLoaderWrapper() throws Exception {
        assumePython("numpy", "torch");
        serve("torchloop", "samples=1000,shape=3x4,dtype=float32,seed=8", 64, 2);
        String loop = """
                      import sys, numpy as np
                      from tensorsocket_client.torch_data import loader
                      from tensorsocket_client.synthetic import SyntheticSpec
                      dl = loader('torchloop', 40, names=('data', 'label', 'id'))
                      spec = SyntheticSpec.parse(dl.dataset.consumer.source_description)
                      for e in range(2):
                          seen = []
                          for x, y, i in dl:
                              ids = i.numpy()
                              assert np.array_equal(x.numpy(), spec.fill(ids)) and np.array_equal(y.numpy(), spec.labels(ids))
                              seen.extend(ids.tolist())
                          assert sorted(seen) == list(range(spec.samples)), e
                          print('{"epoch": %d, "samples": %d, "batches": %d}' % (e, len(seen), len(dl)), flush=True)\
                      """;
        Proc p = startPython(Map.of("OMP_NUM_THREADS", "1"), "-c", loop);
        assertEquals(0, p.exitCode(Duration.ofSeconds(60)), p.stderr());
        assertEquals(2, p.json().size(), p.lines().toString());
        for (Map<String, String> e : p.json()) {
            assertEquals("1000", e.get("samples"), e.toString());
            assertEquals("25", e.get("batches"), e.toString());
        }
    }

    @Test
    void aPlainPipInstallBuildsThePackageFromItsDeclaredBuildRequirements() throws Exception {
        // An isolated build gets only what pyproject.toml declares: without wheel there, an older setuptools
        // fails with "invalid command 'bdist_wheel'". The local index stands in for PyPI (offline here).
        Path index = Path.of("/opt/pypi/simple");
        Assumptions.assumeTrue(
                Files.isDirectory(index.resolve("setuptools")) && Files.isDirectory(index.resolve("wheel")),
                "SKIPPED: no local package index at " + index);
        assumePython("venv", "ensurepip", "pip");
        Path copy = copyOfTheClient();
        Path venv = base.resolve("isolated");
        // the build's environment is isolated whatever the venv sees; the system's numpy spares a download
        for (List<String> cmd : List.of(
                List.of(PYTHON, "-m", "venv", "--system-site-packages", venv.toString()),
                List.of(
                        venv.resolve("bin/pip").toString(),
                        "install",
                        "-q",
                        "--disable-pip-version-check",
                        "--index-url",
                        index.toUri().toString(),
                        copy.toString()))) {
            Proc step = startCommand(cmd);
            assertEquals(0, step.exitCode(Duration.ofMinutes(3)), cmd + ": " + step.stderr());
        }
        Proc imported = startCommand(List.of(
                venv.resolve("bin/python").toString(),
                "-c",
                "import tensorsocket_client, numpy; print(tensorsocket_client.__version__)"));
        assertEquals(0, imported.exitCode(Duration.ofSeconds(60)), imported.stderr());
    }

    private Path copyOfTheClient() throws Exception {
        Path copy = base.resolve("src");
        if (Files.exists(copy)) {
            return copy;
        }
        try (var files = Files.walk(pythonClient())) {
            for (Path f : (Iterable<Path>) files::iterator) {
                String rel = pythonClient().relativize(f).toString();
                if (rel.contains("__pycache__") || rel.startsWith("build") || rel.contains("egg-info")) {
                    continue;
                }
                Path to = copy.resolve(rel);
                if (Files.isDirectory(f)) {
                    Files.createDirectories(to);
                } else {
                    Files.copy(f, to);
                }
            }
        }
        return copy;
    }

    @Test
    void thePackageInstallsOfflineIntoAVirtualEnvironmentAndFeeds() throws Exception {
        assumePython("numpy", "setuptools", "venv", "ensurepip", "pip");
        Path copy = copyOfTheClient();
        Path venv = base.resolve("venv");
        for (List<String> cmd : List.of(
                List.of(PYTHON, "-m", "venv", "--system-site-packages", venv.toString()),
                List.of(
                        venv.resolve("bin/pip").toString(),
                        "install",
                        "-q",
                        "--no-index",
                        "--no-build-isolation",
                        copy.toString()))) {
            Proc step = startCommand(cmd);
            assertEquals(0, step.exitCode(Duration.ofMinutes(2)), cmd + ": " + step.stderr());
        }
        Proc producer = serveExternal("venvfeed");
        Proc feeder = startCommand(List.of(
                venv.resolve("bin/python").toString(),
                "-m",
                "tensorsocket_client",
                "feed",
                "--name",
                "venvfeed",
                "--synthetic",
                "samples=500,shape=8,dtype=uint8,seed=3",
                "--batch-size",
                "32",
                "--no-start"));
        producer.awaitReady();
        Proc c = consume("venvfeed", 32);
        assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
        assertExactEpoch(c.json().getFirst(), 500, "epoch_start");
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(30)), feeder.stderr());
        assertTrue(
                feeder.lines().toString().contains("\"event\": \"fed\""),
                feeder.lines().toString());
    }
}
