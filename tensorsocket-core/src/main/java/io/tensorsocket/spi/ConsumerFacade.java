package io.tensorsocket.spi;

import io.tensorsocket.TensorConsumer;
import java.util.Objects;
import java.util.function.BiFunction;

/**
 * Puts a {@link TensorConsumer} over an engine a module opened itself (a Flight consumer with a token given
 * in code, say): the returned consumer has the whole contract of one from {@link TensorConsumer#connect},
 * and closing it closes the engine. Not user API: this package is exported only to the project's modules.
 *
 * <p>Mechanism: the façade's constructor stays private to it; {@link TensorConsumer}'s static initializer
 * hands this class a reference to it ({@link #install}), which {@link #over} runs first if it has not run.
 */
public final class ConsumerFacade {
    private static final Installed<BiFunction<String, ConsumerEngine, TensorConsumer>> CONSTRUCTOR =
            new Installed<>(TensorConsumer.class, "the consumer façade's constructor");

    private ConsumerFacade() {}

    /** A consumer over {@code engine}, named {@code address} in its messages. */
    public static TensorConsumer over(String address, ConsumerEngine engine) {
        Objects.requireNonNull(engine, "engine");
        return CONSTRUCTOR.get().apply(address, engine);
    }

    /** Called once, by {@link TensorConsumer}'s static initializer. */
    public static void install(BiFunction<String, ConsumerEngine, TensorConsumer> facadeConstructor) {
        CONSTRUCTOR.install(facadeConstructor);
    }
}
