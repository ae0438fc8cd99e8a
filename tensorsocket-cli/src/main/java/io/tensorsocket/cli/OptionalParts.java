package io.tensorsocket.cli;

import java.util.Arrays;
import java.util.List;

/**
 * The parts of the command line that an installation may leave out: DJL and PyTorch's native library, which
 * {@code train} and the jobs of {@code demo --model} run and which the pip wheel does not carry. A command that
 * needs them checks here first and fails with what to install instead, never with a {@code NoClassDefFoundError}
 * halfway through.
 */
final class OptionalParts {
    /** The models {@code train} and {@code demo --model} can build. */
    static final List<String> MODELS =
            Arrays.stream(TrainCommand.Architecture.values()).map(Enum::name).toList();

    private OptionalParts() {}

    /** Whether DJL, its PyTorch engine and this project's DJL module are on the class path. */
    static boolean hasDjl() {
        for (String c :
                List.of("ai.djl.Model", "ai.djl.pytorch.engine.PtEngine", "io.tensorsocket.djl.SharedDataset")) {
            try {
                Class.forName(c, false, OptionalParts.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                return false;
            }
        }
        return true;
    }

    /** Fails, saying what to install instead, unless DJL is here for {@code command}. */
    static void requireDjl(String command) {
        if (!hasDjl()) {
            throw new IllegalStateException("'" + command + "' trains a DJL model on PyTorch, which this"
                    + " installation does not carry (the pip wheel holds the producer and its tools, not DJL or PyTorch's"
                    + " native library); train from Python with tensorsocket_client.TensorConsumer instead, or build the"
                    + " full command line from source (./mvnw -DskipTests package) and run its bin/tensorsocket");
        }
    }

    /** Fails unless {@code model} names one of {@link #MODELS}. */
    static void checkModel(String model) {
        if (!MODELS.contains(model)) {
            throw new IllegalArgumentException("unknown model '" + model + "': use " + String.join(" or ", MODELS));
        }
    }
}
