package io.tensorsocket.cli;

import ai.djl.Model;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.Batchifier;
import io.tensorsocket.Batch;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.djl.TensorArrays;

/** A real training step on each batch (a DJL model on CPU), for jobs that do not simulate their step. */
final class ModelStep implements AutoCloseable {
    private final Model model;
    private final Trainer trainer;
    private final String input;
    private final String label;

    ModelStep(String modelName, int classes, TensorSpec input, String label, int batchSize, float lr) {
        Models.configureEngine(1);
        this.input = input.name();
        this.label = label;
        this.model = Model.newInstance(modelName);
        model.setBlock(Models.block(modelName, classes));
        this.trainer = model.newTrainer(new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(Optimizer.adam()
                        .optLearningRateTracker(Tracker.fixed(lr))
                        .build()));
        trainer.initialize(new Shape(input.batchShape(batchSize)));
    }

    /** One forward, backward and optimizer step on {@code batch}, reading its tensors in place. */
    void train(Batch batch) {
        NDManager sub = trainer.getManager().newSubManager();
        try (ai.djl.training.dataset.Batch b = new ai.djl.training.dataset.Batch(
                sub,
                new NDList(TensorArrays.view(sub, batch.tensor(input))),
                new NDList(TensorArrays.view(sub, batch.tensor(label))),
                batch.size(),
                Batchifier.STACK,
                Batchifier.STACK,
                0,
                0)) {
            EasyTrain.trainBatch(trainer, b);
            trainer.step();
        }
    }

    @Override
    public void close() {
        trainer.close();
        model.close();
    }
}
