package io.tensorsocket.cli;

import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.djl.SharedDataset;
import io.tensorsocket.pipeline.IdxFile;
import io.tensorsocket.pipeline.Normalization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The training behind {@code tensorsocket train}: a DJL model on CPU fitted from a running producer through the
 * unchanged {@code EasyTrain.fit}, one JSON line per epoch. Apart from {@link TrainCommand} so that the command
 * line starts, and says what is missing, where DJL is not installed.
 */
final class DjlTraining {
    private DjlTraining() {}

    static int run(TrainCommand t) throws Exception {
        Models.configureEngine(t.threads);
        ConsumerOptions opts = t.consumer.options(t.batchSize);
        try (TensorConsumer c = t.consumer.connect(opts, t.remote.build(t.epochs));
                NDManager manager = NDManager.newBaseManager()) {
            TensorSpec input = c.tensors().stream()
                    .filter(spec -> spec.name().equals(t.data))
                    .findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("the producer's batches have no tensor '" + t.data
                            + "'; they hold " + c.tensors() + " (choose one with --data)"));
            SharedDataset shared = SharedDataset.of(c, t.data, t.label);
            ArrayDataset test =
                    t.testIdx == null ? null : testSet(manager, t.testIdx, c.sourceDescription(), input.sampleShape());
            try (Model m = Model.newInstance(t.model.name())) {
                m.setBlock(Models.block(t.model.name(), t.classes));
                DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(Optimizer.adam()
                                .optLearningRateTracker(Tracker.fixed(t.lr))
                                .build())
                        .addEvaluator(new Accuracy())
                        .addTrainingListeners(TrainingListener.Defaults.basic());
                try (Trainer trainer = m.newTrainer(config)) {
                    trainer.initialize(new Shape(input.batchShape(t.batchSize)));
                    for (int e = 0; e < t.epochs; e++) { // the job's epochs, counted from 1 when printed
                        long started = System.nanoTime();
                        EasyTrain.fit(trainer, 1, shared, test);
                        double seconds = (System.nanoTime() - started) / 1e9;
                        TrainingResult r = trainer.getTrainingResult();
                        Float validated = r.getValidateEvaluation("Accuracy");
                        System.out.println(Json.object()
                                .put("epoch", e + 1)
                                .put("epochs", t.epochs)
                                .put("samples", shared.lastEpochSamples())
                                .put("loss", (double) r.getTrainLoss())
                                .put("accuracy", (double)
                                        (validated != null ? validated : r.getTrainEvaluation("Accuracy")))
                                .put("accuracy_on", validated != null ? "test" : "train")
                                .put("train_accuracy", (double) r.getTrainEvaluation("Accuracy"))
                                .put("samples_per_s", shared.lastEpochSamples() / seconds)
                                .put("seconds", seconds)
                                .put("model", t.model.name())
                                .put("lr", (double) t.lr)
                                .put("batch_size", t.batchSize)
                                .put("start", c.startMode().label()));
                        System.out.flush();
                        if (c.isEndOfStream()) {
                            break;
                        }
                    }
                }
            }
        }
        return 0;
    }

    /**
     * The test split as float32 images normalized like the producer's (its description carries mean and
     * std), shaped like the training input.
     */
    static ArrayDataset testSet(NDManager manager, Path dir, String description, long[] sampleShape)
            throws IOException {
        IdxFile images = IdxFile.read(find(dir, "t10k-images-idx3-ubyte"));
        IdxFile labels = IdxFile.read(find(dir, "t10k-labels-idx1-ubyte"));
        Normalization n = Normalization.fromDescription(description)
                .orElseThrow(() -> new IllegalArgumentException(
                        "the producer does not say how it normalises its images (no mean=... std=... in its description: "
                                + description
                                + "); --test-idx needs a producer started with --idx and float32 output"));
        byte[] px = images.data();
        float[] x = new float[px.length];
        for (int i = 0; i < px.length; i++) {
            x[i] = n.apply(px[i] & 0xFF);
        }
        float[] y = new float[labels.count()];
        for (int i = 0; i < y.length; i++) {
            y[i] = labels.data()[i] & 0xFF;
        }
        long[] shape = new long[sampleShape.length + 1];
        shape[0] = images.count();
        System.arraycopy(sampleShape, 0, shape, 1, sampleShape.length);
        return new ArrayDataset.Builder()
                .setData(manager.create(x, new Shape(shape)))
                .optLabels(manager.create(y, new Shape(y.length)))
                .setSampling(1000, false)
                .build();
    }

    private static Path find(Path dir, String name) throws IOException {
        for (String n : new String[] {name + ".gz", name}) {
            if (Files.isRegularFile(dir.resolve(n))) {
                return dir.resolve(n);
            }
        }
        throw new IOException("no " + name + "[.gz] in " + dir + "; --test-idx needs the MNIST-format test files");
    }
}
