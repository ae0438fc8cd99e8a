package io.tensorsocket.spi;

import io.tensorsocket.TensorConsumer;
import java.util.Objects;
import java.util.function.BiFunction;

/**
 * Puts a {@link TensorConsumer} over an engine a module opened itself (a Flight consumer with a token given
 * in code, say): the returned consumer has the whole contract of one from {@link TensorConsumer#connect},
 * and closing it closes the engine. Not user API: this package is exported only to the project's modules.
 */
public final class ConsumerFacade {
    private static volatile BiFunction<String, ConsumerEngine, TensorConsumer> facade;

    private ConsumerFacade() {
    }

    /** A consumer over {@code engine}, named {@code address} in its messages. */
    public static TensorConsumer over(String address, ConsumerEngine engine) {
        Objects.requireNonNull(engine, "engine");
        if (facade == null) {
            try { // its static initializer installs the façade's constructor
                Class.forName(TensorConsumer.class.getName(), true, TensorConsumer.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }
        return facade.apply(address, engine);
    }

    /** Called once, by {@link TensorConsumer}'s class initializer. */
    public static void install(BiFunction<String, ConsumerEngine, TensorConsumer> constructor) {
        if (facade != null) {
            throw new IllegalStateException("the consumer façade is installed already");
        }
        facade = constructor;
    }
}
