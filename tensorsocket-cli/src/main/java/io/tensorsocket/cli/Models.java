package io.tensorsocket.cli;

import ai.djl.engine.Engine;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.pooling.Pool;

/** The DJL models that {@code train} and the jobs of {@code demo --model} build, and the engine settings they run under. */
final class Models {
    private Models() {}

    /** Offline (the engine ships in the class path; never download one), {@code threads} PyTorch threads, one inter-op thread. */
    static void configureEngine(int threads) {
        if (System.getenv("DJL_OFFLINE") == null && System.getProperty("DJL_OFFLINE") == null) {
            System.setProperty("DJL_OFFLINE", "true");
        }
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
    }

    /**
     * Loads the PyTorch engine and its native library now. A job does so before it connects: from then on the
     * producer counts the batches sent to it as held, and a cold load can outlast the producer's stall timeout.
     */
    static void loadEngine() {
        configureEngine(1);
        Engine.getEngine("PyTorch");
    }

    /** The named model ({@link OptionalParts#MODELS}) with {@code classes} outputs. */
    static Block block(String model, int classes) {
        return switch (model) {
            case "mlp" ->
                new SequentialBlock()
                        .add(Blocks.batchFlattenBlock())
                        .add(Linear.builder().setUnits(256).build())
                        .add(Activation::relu)
                        .add(Linear.builder().setUnits(128).build())
                        .add(Activation::relu)
                        .add(Linear.builder().setUnits(classes).build());
            case "cnn" ->
                new SequentialBlock()
                        .add(Conv2d.builder()
                                .setKernelShape(new Shape(3, 3))
                                .optPadding(new Shape(1, 1))
                                .setFilters(32)
                                .build())
                        .add(Activation::relu)
                        .add(Pool.maxPool2dBlock(new Shape(2, 2)))
                        .add(Conv2d.builder()
                                .setKernelShape(new Shape(3, 3))
                                .optPadding(new Shape(1, 1))
                                .setFilters(64)
                                .build())
                        .add(Activation::relu)
                        .add(Pool.maxPool2dBlock(new Shape(2, 2)))
                        .add(Blocks.batchFlattenBlock())
                        .add(Linear.builder().setUnits(128).build())
                        .add(Activation::relu)
                        .add(Linear.builder().setUnits(classes).build());
            default -> {
                OptionalParts.checkModel(model);
                throw new AssertionError(model);
            }
        };
    }
}
