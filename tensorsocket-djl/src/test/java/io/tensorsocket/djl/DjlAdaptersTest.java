package io.tensorsocket.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListener.Defaults;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
class DjlAdaptersTest {
    @TempDir
    Path tmp;

    @Test
    void sharedArraysHoldTheBatchAndDieWithIt() throws Exception {
        Path dir = tmp.resolve("views");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir)
                        .source(new SyntheticSource(SyntheticSpec.parse("samples=100,shape=4,dtype=float32"), 10))
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
                NDManager manager = NDManager.newBaseManager()) {
            SharedDataset shared = SharedDataset.of(c, List.of("data", "id"), List.of("label"));
            Iterator<ai.djl.training.dataset.Batch> it = shared.getData(manager).iterator();
            ai.djl.training.dataset.Batch first = it.next();
            NDArray data = first.getData().get(0);
            NDArray ids = first.getData().get(1);
            assertEquals(new Shape(10, 4), data.getShape());
            assertEquals(DataType.FLOAT32, data.getDataType());
            assertEquals(DataType.INT64, ids.getDataType());
            SyntheticSpec spec = SyntheticSpec.parse("samples=100,shape=4,dtype=float32");
            long[] idValues = ids.toLongArray();
            float[] values = data.toFloatArray();
            try (var arena = Arena.ofConfined()) {
                var expected = arena.allocate(16);
                for (int i = 0; i < 10; i++) {
                    spec.fill(idValues[i], expected);
                    for (int j = 0; j < 4; j++) {
                        assertEquals(expected.getAtIndex(ValueLayout.JAVA_FLOAT, j), values[i * 4 + j]);
                    }
                }
            }
            assertEquals(10, shared.size());
            ai.djl.training.dataset.Batch second = it.next(); // closes the first
            assertThrows(IllegalStateException.class, data::toFloatArray, "arrays of a released batch are freed");
            second.close();
            assertThrows(
                    IllegalStateException.class, () -> second.getData().get(0).toFloatArray());
            int rest = 0;
            while (it.hasNext()) {
                it.next().close();
                rest++;
            }
            assertEquals(8, rest);
        }
    }

    @Test
    void unknownTensorNamesAreRejected() {
        Path dir = tmp.resolve("names");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir)
                        .source(new SyntheticSource(SyntheticSpec.parse("samples=10"), 5))
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(5))) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> SharedDataset.of(c, "image", "label"));
            assertTrue(e.getMessage().contains("no tensor 'image'"), e.getMessage());
        }
    }

    @Test
    void aDjlDatasetIsServedExactlyAndEasyTrainLearnsFromTheSharedCopy() throws Exception {
        int n = 1000;
        float[] x = new float[n * 2];
        float[] y = new float[n];
        Random r = new Random(3);
        for (int i = 0; i < n; i++) {
            x[2 * i] = r.nextFloat();
            x[2 * i + 1] = i; // the sample's identity, to check exactly-once
            y[i] = x[2 * i] > 0.5f ? 1 : 0;
        }
        Path dir = tmp.resolve("djl");
        try (NDManager m = NDManager.newBaseManager()) {
            ArrayDataset dataset = new ArrayDataset.Builder()
                    .setData(m.create(x, new Shape(n, 2)))
                    .optLabels(m.create(y, new Shape(n)))
                    .setSampling(32, true)
                    .build();
            try (DjlDatasetSource source = DjlDatasetSource.builder(dataset)
                            .dataNames("x")
                            .labelNames("y")
                            .build();
                    TensorProducer p = TensorProducer.builder()
                            .directory(dir)
                            .source(source)
                            .epochs(4)
                            .build()
                            .start();
                    TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(50))) {
                // epoch 0 by hand: every sample exactly once
                List<Integer> seen = new ArrayList<>();
                for (io.tensorsocket.Batch b : c) {
                    for (int i = 0; i < b.size(); i++) {
                        seen.add((int) b.tensor("x").getFloat(2L * i + 1));
                    }
                }
                assertEquals(n, seen.size());
                assertEquals(n, seen.stream().distinct().count());

                // epochs 1-3 through EasyTrain, unchanged
                SequentialBlock block = new SequentialBlock()
                        .add(arrays -> new NDList(arrays.singletonOrThrow().get(":, 0:1")))
                        .add(Linear.builder().setUnits(16).build())
                        .add(Activation::relu)
                        .add(Linear.builder().setUnits(2).build());
                try (Model model = Model.newInstance("toy")) {
                    model.setBlock(block);
                    DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                            .optOptimizer(Optimizer.adam()
                                    .optLearningRateTracker(Tracker.fixed(0.05f))
                                    .build())
                            .addEvaluator(new Accuracy())
                            .addTrainingListeners(Defaults.basic());
                    try (Trainer trainer = model.newTrainer(config)) {
                        trainer.initialize(new Shape(50, 2));
                        EasyTrain.fit(trainer, 3, SharedDataset.of(c, "x", "y"), null);
                        float accuracy = trainer.getTrainingResult().getTrainEvaluation("Accuracy");
                        assertTrue(accuracy > 0.9f, "accuracy " + accuracy);
                    }
                }
                assertTrue(c.isEndOfStream());
            }
        }
    }

    @Test
    void aRandomAccessDatasetServedByIndexGivesAConsumerJoiningMidEpochExactEpochs() throws Exception {
        int n = 1000;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = i; // the sample's identity
        }
        Path dir = tmp.resolve("djl-exact");
        try (NDManager m = NDManager.newBaseManager()) {
            ArrayDataset dataset = new ArrayDataset.Builder()
                    .setData(m.create(x, new Shape(n, 1)))
                    .optLabels(m.create(x, new Shape(n)))
                    .setSampling(32, true)
                    .build();
            assertThrows(
                    IllegalArgumentException.class,
                    () -> DjlDatasetSource.builder(dataset).byIndex(0));
            try (DjlIndexedSource source = DjlDatasetSource.builder(dataset)
                            .dataNames("x")
                            .labelNames("y")
                            .seed(5)
                            .byIndex(32);
                    TensorProducer p = TensorProducer.builder()
                            .directory(dir)
                            .source(source)
                            .epochs(4)
                            .rubberBand(0)
                            .slots(8)
                            .startGrace(Duration.ZERO)
                            .build()
                            .start();
                    TensorConsumer first = TensorConsumer.connect(dir, ConsumerOptions.batchSize(50))) {
                ExecutorService pool = Executors.newSingleThreadExecutor();
                Iterator<io.tensorsocket.Batch> it = first.iterator();
                for (int i = 0; i < 5; i++) {
                    it.next().close();
                }
                // The producer now waits for a slot in the middle of epoch 0 (8 slots, the first consumer at sample
                // 250): the late one joins there, then the first goes on.
                TensorConsumer late = TensorConsumer.connect(dir, ConsumerOptions.batchSize(45));
                Future<?> rest = pool.submit(() -> {
                    while (it.hasNext()) {
                        it.next().close();
                    }
                    for (int e = 1; e < 4; e++) {
                        for (io.tensorsocket.Batch b : first) {
                            b.close();
                        }
                    }
                    return null;
                });
                try (late) {
                    assertEquals(StartMode.EXACT, late.startMode(), "joined at sample " + late.startSample());
                    assertEquals(StartMode.EXACT, late.midEpochStart());
                    for (int e = 0; e < 2; e++) {
                        BitSet seen = new BitSet(n);
                        int count = 0;
                        for (io.tensorsocket.Batch b : late) {
                            for (int i = 0; i < b.size(); i++) {
                                seen.set((int) b.tensor("x").getFloat(i));
                                assertEquals(
                                        b.tensor("x").getFloat(i), b.tensor("y").getFloat(i));
                                count++;
                            }
                        }
                        assertEquals(n, count, "epoch " + e);
                        assertEquals(n, seen.cardinality(), "epoch " + e + " of the late joiner is one pass");
                    }
                }
                rest.get(60, TimeUnit.SECONDS);
                pool.shutdown();
            }
        }
    }
}
