package io.tensorsocket.spi;

import io.tensorsocket.TensorConsumer;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Objects;

/**
 * Puts a {@link TensorConsumer} over an engine a module opened itself (a Flight consumer with a token given
 * in code, say): the returned consumer has the whole contract of one from {@link TensorConsumer#connect},
 * and closing it closes the engine. Not user API: this package is exported only to the project's modules.
 *
 * <p>The façade's constructor is private to it; this class reaches it with a private lookup, which only code
 * of the core module itself may make, so that the façade needs to know nothing of this class.
 */
public final class ConsumerFacade {
    private static final MethodHandle CONSTRUCTOR;

    static {
        try {
            CONSTRUCTOR = MethodHandles.privateLookupIn(TensorConsumer.class, MethodHandles.lookup())
                    .findConstructor(TensorConsumer.class, MethodType.methodType(void.class, String.class, ConsumerEngine.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private ConsumerFacade() {
    }

    /** A consumer over {@code engine}, named {@code address} in its messages. */
    public static TensorConsumer over(String address, ConsumerEngine engine) {
        Objects.requireNonNull(engine, "engine");
        try {
            return (TensorConsumer) CONSTRUCTOR.invokeExact(address, engine);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }
}
