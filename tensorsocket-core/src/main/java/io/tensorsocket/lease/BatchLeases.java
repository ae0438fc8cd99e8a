package io.tensorsocket.lease;

import io.tensorsocket.Batch;
import io.tensorsocket.spi.Installed;

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

    /** Where {@link Batch} installs the one implementation. */
    Installed<BatchLeases> INSTALLED = new Installed<>(Batch.class, "BatchLeases");

    /** The implementation {@link Batch} installed. */
    static BatchLeases get() {
        return INSTALLED.get();
    }

    /** Called once, by {@link Batch}'s static initializer. */
    static void install(BatchLeases leases) {
        INSTALLED.install(leases);
    }
}
