package io.tensorsocket.spi;

import java.lang.invoke.MethodHandles;
import java.util.Objects;

/**
 * The one implementation that a type of the API installs, from its static initializer, for code of this project that
 * must reach what the type keeps private (a façade's constructor, a batch's lease, a producer's engine). Installed
 * once; reading it first runs the installer's static initializer if it has not run, so the installing type needs no
 * reflection to be reached (the JDK's own shared-secrets pattern).
 *
 * @param <T> what is installed
 */
public final class Installed<T> {
    private final Class<?> installer;
    private final String what;
    private volatile T value;

    /** A slot that {@code installer}'s static initializer fills with {@code what} (named in the messages). */
    public Installed(Class<?> installer, String what) {
        this.installer = Objects.requireNonNull(installer);
        this.what = Objects.requireNonNull(what);
    }

    /** Called once, by the installer's static initializer. */
    public synchronized void install(T implementation) {
        if (value != null) {
            throw new IllegalStateException(what + " was installed twice");
        }
        value = Objects.requireNonNull(implementation);
    }

    /** What the installer installed, running its static initializer first where it has not run. */
    public T get() {
        T v = value;
        if (v == null) {
            try {
                MethodHandles.lookup().ensureInitialized(installer);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            v = Objects.requireNonNull(value, installer.getSimpleName() + " installed no " + what);
        }
        return v;
    }
}
