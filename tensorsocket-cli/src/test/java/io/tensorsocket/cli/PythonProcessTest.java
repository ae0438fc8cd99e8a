package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tensorsocket.TensorProducer;
import io.tensorsocket.pipeline.IdxDataset;
import io.tensorsocket.pipeline.IdxSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Python consumer processes (clients/python) next to Java ones, on one Java producer. */
class PythonProcessTest extends ProcessTestBase {

    @Test
    void javaAndPythonConsumersOfMixedBatchSizesGetEveryByteOfTwoEpochs() throws Exception {
        assumePython("numpy");
        int samples = 3000;
        serve("mixed", "samples=" + samples + ",shape=4x6,dtype=bfloat16,seed=21", 32, 2, "--min-consumers", "4");
        List<Proc> consumers = List.of(
                consume("mixed", 32), consume("mixed", 50), pythonConsume("mixed", 17), pythonConsume("mixed", 100));
        for (Proc c : consumers) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            List<Map<String, String>> epochs = c.json();
            assertEquals(2, epochs.size(), c.lines().toString());
            for (int e = 0; e < 2; e++) {
                assertEquals(Integer.toString(e), epochs.get(e).get("epoch"));
                assertExactEpoch(epochs.get(e), samples, "epoch_start");
            }
        }
        System.out.println("python b=17: " + consumers.get(2).lines().getLast());
        System.out.println("java   b=32: " + consumers.get(0).lines().getLast());
    }

    /**
     * Python consumers are handed their batches through descriptor rings by default; one past the producer's rings
     * reads over its socket, as does one that asks for it, and every one of them gets every byte of both epochs.
     */
    @Test
    void pythonConsumersReadTheirRingsOrPastTheRingsTheirSocketsAndGetEveryByte() throws Exception {
        assumePython("numpy");
        int samples = 2000;
        serve(
                "pyring",
                "samples=" + samples + ",shape=3x5,dtype=float32,seed=9",
                25,
                2,
                "--min-consumers",
                "4",
                "--rings",
                "2");
        List<Proc> consumers = List.of(
                pythonConsume("pyring", 30),
                pythonConsume("pyring", 64, "--spin-us", "500"),
                pythonConsume("pyring", 40, "--handoff", "socket"),
                pythonConsume("pyring", 7));
        Map<String, Integer> handoffs = new TreeMap<>();
        for (Proc c : consumers) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            List<Map<String, String>> epochs = c.json();
            assertEquals(2, epochs.size(), c.lines().toString());
            epochs.forEach(e -> assertExactEpoch(e, samples, "epoch_start"));
            handoffs.merge(epochs.getFirst().get("handoff"), 1, Integer::sum);
        }
        assertEquals("socket", consumers.get(2).json().getFirst().get("handoff"), "asked for the socket");
        assertEquals(Map.of("ring", 2, "socket", 2), handoffs, "two rings, two consumers past them or asking for none");
    }

    @Test
    void aPythonConsumerKilledWithSigkillLeavesTheJavaConsumersExact() throws Exception {
        assumePython("numpy");
        int samples = 4000;
        serve("killpy", "samples=" + samples + ",shape=16,dtype=float32,seed=3", 20, 3, "--min-consumers", "3");
        Proc a = consume("killpy", 20, "--step-ms", "1");
        Proc b = consume("killpy", 64, "--step-ms", "1");
        Proc victim = pythonConsume("killpy", 30, "--step-ms", "5");
        victim.awaitLine(l -> l.contains("\"epoch\": 0"), Duration.ofSeconds(60)); // now it holds batches of epoch 1
        assertTrue(victim.isAlive(), victim.stderr());
        victim.kill();
        for (Proc c : new Proc[] {a, b}) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            List<Map<String, String>> epochs = c.json();
            assertEquals(3, epochs.size(), c.lines().toString());
            epochs.forEach(e -> assertExactEpoch(e, samples, "epoch_start"));
        }
    }

    @Test
    void aPythonConsumerReportsItsWaitAndWorkTimeToStatus() throws Exception {
        assumePython("numpy");
        serve("pystatus", "samples=4000,shape=8,dtype=float32,seed=2", 16, 0);
        pythonConsume("pystatus", 20, "--step-ms", "20");
        Map<String, String> consumer = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            Proc status = start("status", "pystatus", "--once", "--json");
            assertEquals(0, status.exitCode(Duration.ofSeconds(30)), status.stderr());
            var consumers =
                    StatusListCleanProcessTest.consumerObjects(status.lines().getFirst());
            if (consumers.size() == 1
                    && consumers.getFirst().get("reported").equals("true")
                    && Double.parseDouble(consumers.getFirst().get("work_s")) > 0) {
                consumer = consumers.getFirst();
                break;
            }
            Thread.sleep(300);
        }
        assertNotNull(consumer, "the Python consumer never reported time spent working");
        assertEquals("20", consumer.get("batch_size"));
        assertTrue(Double.parseDouble(consumer.get("work_s")) > 0, consumer.toString());
    }

    @Test
    void aKilledProducerMakesAPythonConsumerFailWithinASecond() throws Exception {
        assumePython("numpy");
        Proc producer = serve("pydies", "samples=100000,shape=8,dtype=float32,seed=1", 10, 0);
        Proc c = pythonConsume("pydies", 25, "--step-ms", "2");
        // it is iterating once the producer took it (the producer's log says so; under load that may take a while)
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!producer.stderr().contains("joined at") && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(producer.stderr().contains("joined at"), producer.stderr());
        assertTrue(c.isAlive(), c.stderr());
        long killedAt = System.nanoTime();
        producer.kill();
        assertNotEquals(0, c.exitCode(Duration.ofSeconds(10)));
        double seconds = (System.nanoTime() - killedAt) / 1e9;
        assertTrue(
                c.errorLine().startsWith("tensorsocket: error: lost the connection to producer 'pydies'"), c.stderr());
        assertTrue(c.errorLine().contains("exited or was killed"), c.errorLine());
        assertEquals(1, c.stderr().strip().lines().count(), c.stderr());
        assertTrue(seconds < 1.5, "the Python consumer took " + seconds + " s to fail");
    }

    @Test
    @Timeout(240)
    void aPyTorchTrainingLoopLearnsFashionMnistFromTheJavaProducer() throws Exception {
        Path fashion = TrainProcessTest.FASHION;
        assumeTrue(
                Files.isDirectory(fashion),
                "needs Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist)");
        assumePython("numpy", "torch");
        Path dir = base.resolve("fmnist-py");
        IdxSource source = IdxSource.builder(IdxDataset.open(fashion, "train"))
                .floats(0.2860f, 0.3530f)
                .batchSize(100)
                .seed(7)
                .build();
        try (TensorProducer p =
                TensorProducer.builder().directory(dir).source(source).epochs(1).build()) {
            p.start();
            Proc train = startPython(
                    Map.of("OMP_NUM_THREADS", "1"),
                    pythonClient().resolve("examples/train_mlp.py").toString(),
                    "--dir",
                    dir.toString(),
                    "--batch-size",
                    "128",
                    "--lr",
                    "0.002",
                    "--test-idx",
                    fashion.toString());
            assertEquals(0, train.exitCode(Duration.ofSeconds(200)), train.stderr());
            Map<String, String> epoch = train.json().getFirst();
            System.out.println("python trainer: " + train.lines().getFirst());
            assertEquals("1", epoch.get("epoch"), epoch.toString());
            assertEquals("60000", epoch.get("samples"), epoch.toString());
            assertEquals("469", epoch.get("batches"), epoch.toString());
            double accuracy = Double.parseDouble(epoch.get("accuracy"));
            assertTrue(accuracy >= 0.80, "test accuracy " + accuracy + ": " + epoch);
            assertTrue(p.await(Duration.ofSeconds(30)));
        }
    }

    /**
     * The command-line path a user follows: {@code serve --idx} without normalisation options (it serves
     * {@code v / 255}), then the example with only {@code --test-idx}. The example must normalise its test set
     * like the served training set, which it learns from the producer; with its own idea of mean and std
     * it would report about 50%.
     */
    @Test
    @Timeout(240)
    void theExampleTrainsOnWhatServeIdxServesAndTestsLikeIt() throws Exception {
        Path fashion = TrainProcessTest.FASHION;
        assumeTrue(
                Files.isDirectory(fashion),
                "needs Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist)");
        assumePython("numpy", "torch");
        start("serve", "--name", "fm-cli", "--idx", fashion.toString(), "--batch-size", "128", "--epochs", "2")
                .awaitReady();
        Proc train = startPython(
                Map.of("OMP_NUM_THREADS", "1"),
                pythonClient().resolve("examples/train_mlp.py").toString(),
                "--name",
                "fm-cli",
                "--epochs",
                "2",
                "--test-idx",
                fashion.toString());
        assertEquals(0, train.exitCode(Duration.ofSeconds(200)), train.stderr());
        List<Map<String, String>> epochs = train.json();
        System.out.println("python trainer on serve --idx: " + train.lines());
        assertEquals(2, epochs.size(), train.lines().toString());
        for (int e = 0; e < 2; e++) {
            assertEquals(Integer.toString(e + 1), epochs.get(e).get("epoch"), epochs.toString());
            assertEquals("60000", epochs.get(e).get("samples"), epochs.toString());
        }
        double accuracy = Double.parseDouble(epochs.getFirst().get("accuracy"));
        assertTrue(accuracy > 0.70, "test accuracy after one epoch " + accuracy + ": " + epochs);
    }
}
