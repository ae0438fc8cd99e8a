package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tensorsocket.TensorProducer;
import io.tensorsocket.pipeline.IdxDataset;
import io.tensorsocket.pipeline.IdxSource;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Two DJL trainers with different learning rates and batch sizes learn Fashion-MNIST from one shared loader. */
@Timeout(300)
class TrainProcessTest extends ProcessTestBase {
    static final Path FASHION = Path.of("/usr/share/datasets/fashion-mnist");

    @Test
    void twoTrainersShareOneFashionMnistLoaderAndBothLearnIt() throws Exception {
        assumeTrue(
                Files.isDirectory(FASHION),
                "needs Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist)");
        Path dir = base.resolve("fmnist");
        IdxSource source = IdxSource.builder(IdxDataset.open(FASHION, "train"))
                .floats(0.2860f, 0.3530f)
                .batchSize(100)
                .seed(7)
                .build();
        try (TensorProducer p = TensorProducer.builder()
                .directory(dir)
                .source(source)
                .epochs(1)
                .minConsumers(2)
                .build()) {
            p.start();
            Proc slow = start(
                    "train",
                    "--dir",
                    dir.toString(),
                    "--model",
                    "mlp",
                    "--lr",
                    "0.001",
                    "--batch-size",
                    "64",
                    "--test-idx",
                    FASHION.toString());
            Proc fast = start(
                    "train",
                    "--dir",
                    dir.toString(),
                    "--model",
                    "mlp",
                    "--lr",
                    "0.002",
                    "--batch-size",
                    "128",
                    "--test-idx",
                    FASHION.toString());
            for (Proc t : new Proc[] {slow, fast}) {
                assertEquals(0, t.exitCode(Duration.ofMinutes(4)), t.stderr());
                Map<String, String> epoch = t.json().getFirst();
                System.out.println("trainer: " + t.lines().getFirst());
                assertEquals("1", epoch.get("epoch"), epoch.toString());
                assertEquals("60000", epoch.get("samples"), epoch.toString());
                assertEquals("test", epoch.get("accuracy_on"));
                double accuracy = Double.parseDouble(epoch.get("accuracy"));
                assertTrue(accuracy >= 0.80, "test accuracy " + accuracy + ": " + epoch);
            }
            assertTrue(p.await(Duration.ofSeconds(30)));
        }
    }

    @Test
    void trainReadsARemoteProducerOverFlight() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        serve(
                "trainr",
                "samples=640,shape=1x28x28,dtype=float32,seed=5,classes=10",
                64,
                1,
                "--flight",
                "127.0.0.1:" + port);
        Proc t = start(
                "train", "--name", "grpc://127.0.0.1:" + port + "/trainr", "--data", "data", "--batch-size", "32");
        assertEquals(0, t.exitCode(Duration.ofMinutes(2)), t.stderr());
        List<Map<String, String>> epochs = t.json();
        assertEquals(1, epochs.size(), t.lines().toString());
        assertEquals("640", epochs.getFirst().get("samples"), epochs.toString());
    }

    @Test
    void trainNumbersTheJobsEpochsFromOne() throws Exception {
        serve("train2", "samples=640,shape=1x28x28,dtype=float32,seed=5,classes=10", 64, 2);
        Proc t = start("train", "--name", "train2", "--data", "data", "--batch-size", "64", "--epochs", "2");
        assertEquals(0, t.exitCode(Duration.ofMinutes(2)), t.stderr());
        List<Map<String, String>> epochs = t.json();
        assertEquals(2, epochs.size(), t.lines().toString());
        for (int e = 0; e < 2; e++) {
            assertEquals(Integer.toString(e + 1), epochs.get(e).get("epoch"), epochs.toString());
            assertEquals("2", epochs.get(e).get("epochs"), epochs.toString());
            assertEquals("640", epochs.get(e).get("samples"), epochs.toString());
        }
        assertFalse(t.stderr().contains("CUDA"), "a CPU-only train warns about CUDA: " + t.stderr());
    }
}
