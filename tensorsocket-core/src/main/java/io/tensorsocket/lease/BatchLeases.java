package io.tensorsocket.lease;

import io.tensorsocket.Batch;
import java.lang.invoke.MethodHandles;
import java.util.Objects;

/**
 * What a consumer engine does to the batches it hands out beyond their public API: reads a batch's {@link Lease}
 * and retires it (releases it now, its JDK scope closed later). Not user API: this package is exported to no
 * module.
 *
 * <p>Mechanism: {@link Batch} installs the one implementation from its static initializer, which
 * {@link #get()} runs first if it has not run yet; so {@code Batch} keeps its lease private and needs no
 * reflection to be reached.
 */
public interface BatchLeases {

    /** The lease of {@code batch}. */
    Lease lease(Batch batch);

    /**
     * Releases {@code batch} as {@link Batch#close()} does, leaving its JDK scope open for
     * {@link Lease#closeScope()} later (see {@link Lease#release(boolean)}).
     */
    void retire(Batch batch);

    /** The implementation {@link Batch} installed. */
    static BatchLeases get() {
        BatchLeases b = Holder.installed;
        if (b == null) {
            try {
                MethodHandles.lookup().ensureInitialized(Batch.class);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            b = Objects.requireNonNull(Holder.installed, "Batch installed no BatchLeases");
        }
        return b;
    }

    /** Called once, by {@link Batch}'s static initializer. */
    static void install(BatchLeases leases) {
        Holder.install(leases);
    }

    /** Where {@link #install} keeps the implementation. */
    final class Holder {
        private static volatile BatchLeases installed;

        private Holder() {}

        private static synchronized void install(BatchLeases leases) {
            if (installed != null) {
                throw new IllegalStateException("BatchLeases installed twice");
            }
            installed = Objects.requireNonNull(leases);
        }
    }
}
