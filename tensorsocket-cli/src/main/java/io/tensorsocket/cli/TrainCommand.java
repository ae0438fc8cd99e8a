package io.tensorsocket.cli;

import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.pooling.Pool;
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
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code tensorsocket train}: trains a DJL model on CPU from a running producer, through the unchanged
 * {@code EasyTrain.fit}, and prints one JSON line per epoch.
 */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = "Train a DJL model (CPU) from a running producer; one JSON line per epoch.")
final class TrainCommand implements Callable<Integer> {

    @picocli.CommandLine.Mixin
    ConsumerFlags consumer;

    /** The models train can build; lower case because users type them (picocli checks the word before anything starts). */
    enum Architecture { mlp, cnn }

    @Option(names = "--model", defaultValue = "mlp", description = "${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}).")
    Architecture model;

    @Option(names = "--lr", defaultValue = "0.001", description = "Adam learning rate (default ${DEFAULT-VALUE}).")
    float lr;

    @Option(names = "--batch-size", required = true, description = "This trainer's batch size.")
    int batchSize;

    @Option(names = "--epochs", defaultValue = "1", description = "Epochs to train (default ${DEFAULT-VALUE}).")
    int epochs;

    @Option(names = "--test-idx", description = "Folder of MNIST-format test files (t10k-*) to measure accuracy on.")
    Path testIdx;

    @Option(names = "--data", defaultValue = "image", description = "Name of the input tensor (default ${DEFAULT-VALUE}).")
    String data;

    @Option(names = "--label", defaultValue = "label", description = "Name of the label tensor (default ${DEFAULT-VALUE}).")
    String label;

    @Option(names = "--classes", defaultValue = "10", description = "Number of classes (default ${DEFAULT-VALUE}).")
    int classes;



    @Option(names = "--threads", defaultValue = "1",
            description = "PyTorch threads, kept low so training leaves CPU to the loader (default ${DEFAULT-VALUE}).")
    int threads;

    @picocli.CommandLine.Mixin
    RemoteClientOptions remote;


    @Override
    public Integer call() throws Exception {
        if (System.getenv("DJL_OFFLINE") == null && System.getProperty("DJL_OFFLINE") == null) {
            System.setProperty("DJL_OFFLINE", "true"); // the engine ships in the class path; never download one
        }
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        if (epochs < 1) {
            throw new IllegalArgumentException("--epochs must be at least 1");
        }
        ConsumerOptions opts = consumer.options(batchSize);
        try (TensorConsumer c = consumer.connect(opts, remote.build(epochs));
             NDManager manager = NDManager.newBaseManager()) {
            TensorSpec input = c.tensors().stream().filter(t -> t.name().equals(data)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("the producer's batches have no tensor '" + data
                            + "'; they hold " + c.tensors() + " (choose one with --data)"));
            SharedDataset shared = SharedDataset.of(c, data, label);
            ArrayDataset test = testIdx == null ? null : testSet(manager, testIdx, c.sourceDescription(), input.sampleShape());
            try (Model m = Model.newInstance(model.name())) {
                m.setBlock(block(model.name(), classes));
                DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(Optimizer.adam().optLearningRateTracker(Tracker.fixed(lr)).build())
                        .addEvaluator(new Accuracy())
                        .addTrainingListeners(TrainingListener.Defaults.basic());
                try (Trainer trainer = m.newTrainer(config)) {
                    trainer.initialize(new Shape(input.batchShape(batchSize)));
                    for (int e = 0; e < epochs; e++) { // the job's epochs, counted from 1 when printed
                        long started = System.nanoTime();
                        EasyTrain.fit(trainer, 1, shared, test);
                        double seconds = (System.nanoTime() - started) / 1e9;
                        TrainingResult r = trainer.getTrainingResult();
                        Float validated = r.getValidateEvaluation("Accuracy");
                        System.out.println(Json.object().put("epoch", e + 1).put("epochs", epochs).put("samples", shared.lastEpochSamples())
                                .put("loss", (double) r.getTrainLoss())
                                .put("accuracy", (double) (validated != null ? validated : r.getTrainEvaluation("Accuracy")))
                                .put("accuracy_on", validated != null ? "test" : "train")
                                .put("train_accuracy", (double) r.getTrainEvaluation("Accuracy"))
                                .put("samples_per_s", shared.lastEpochSamples() / seconds).put("seconds", seconds)
                                .put("model", model.name()).put("lr", (double) lr).put("batch_size", batchSize)
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

    static Block block(String model, int classes) {
        return switch (model) {
            case "mlp" -> new SequentialBlock().add(Blocks.batchFlattenBlock())
                    .add(Linear.builder().setUnits(256).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(128).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(classes).build());
            case "cnn" -> new SequentialBlock()
                    .add(Conv2d.builder().setKernelShape(new Shape(3, 3)).optPadding(new Shape(1, 1)).setFilters(32).build())
                    .add(Activation::relu).add(Pool.maxPool2dBlock(new Shape(2, 2)))
                    .add(Conv2d.builder().setKernelShape(new Shape(3, 3)).optPadding(new Shape(1, 1)).setFilters(64).build())
                    .add(Activation::relu).add(Pool.maxPool2dBlock(new Shape(2, 2)))
                    .add(Blocks.batchFlattenBlock())
                    .add(Linear.builder().setUnits(128).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(classes).build());
            default -> throw new IllegalArgumentException("unknown model '" + model + "': use mlp or cnn");
        };
    }

    /**
     * The test split as float32 images normalized like the producer's (its description carries mean and
     * std), shaped like the training input.
     */
    static ArrayDataset testSet(NDManager manager, Path dir, String description, long[] sampleShape) throws IOException {
        IdxFile images = IdxFile.read(find(dir, "t10k-images-idx3-ubyte"));
        IdxFile labels = IdxFile.read(find(dir, "t10k-labels-idx1-ubyte"));
        Normalization n = Normalization.fromDescription(description).orElseThrow(() -> new IllegalArgumentException(
                "the producer does not say how it normalises its images (no mean=... std=... in its description: "
                        + description + "); --test-idx needs a producer started with --idx and float32 output"));
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
        return new ArrayDataset.Builder().setData(manager.create(x, new Shape(shape)))
                .optLabels(manager.create(y, new Shape(y.length))).setSampling(1000, false).build();
    }

    private static Path find(Path dir, String name) throws IOException {
        for (String n : new String[]{name + ".gz", name}) {
            if (Files.isRegularFile(dir.resolve(n))) {
                return dir.resolve(n);
            }
        }
        throw new IOException("no " + name + "[.gz] in " + dir + "; --test-idx needs the MNIST-format test files");
    }
}
