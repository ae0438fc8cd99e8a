package io.tensorsocket.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code tensorsocket train}: trains a DJL model on CPU from a running producer, through the unchanged
 * {@code EasyTrain.fit}, and prints one JSON line per epoch.
 */
@Command(
        name = "train",
        mixinStandardHelpOptions = true,
        description = "Train a DJL model (CPU) from a running producer; one JSON line per epoch.")
final class TrainCommand implements Callable<Integer> {

    @Mixin
    ConsumerFlags consumer;

    /** The models train can build; lower case because users type them (picocli checks the word before anything starts). */
    enum Architecture {
        mlp,
        cnn
    }

    @Option(
            names = "--model",
            defaultValue = "mlp",
            description = "${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}).")
    Architecture model;

    @Option(names = "--lr", defaultValue = "0.001", description = "Adam learning rate (default ${DEFAULT-VALUE}).")
    float lr;

    @Option(names = "--batch-size", required = true, description = "This trainer's batch size.")
    int batchSize;

    @Option(names = "--epochs", defaultValue = "1", description = "Epochs to train (default ${DEFAULT-VALUE}).")
    int epochs;

    @Option(names = "--test-idx", description = "Folder of MNIST-format test files (t10k-*) to measure accuracy on.")
    Path testIdx;

    @Option(
            names = "--data",
            defaultValue = "image",
            description = "Name of the input tensor (default ${DEFAULT-VALUE}).")
    String data;

    @Option(
            names = "--label",
            defaultValue = "label",
            description = "Name of the label tensor (default ${DEFAULT-VALUE}).")
    String label;

    @Option(names = "--classes", defaultValue = "10", description = "Number of classes (default ${DEFAULT-VALUE}).")
    int classes;

    @Option(
            names = "--threads",
            defaultValue = "1",
            description = "PyTorch threads, kept low so training leaves CPU to the loader (default ${DEFAULT-VALUE}).")
    int threads;

    @Mixin
    RemoteClientOptions remote;

    @Override
    public Integer call() throws Exception {
        OptionalParts.requireDjl("train");
        if (epochs < 1) {
            throw new IllegalArgumentException("--epochs must be at least 1");
        }
        return DjlTraining.run(this);
    }
}
