package io.tensorsocket.spi;

import io.tensorsocket.TensorProducer;

/**
 * A producer's side of {@link UpstreamBoundaries}, for a server that relays its stream on a remote relay's
 * behalf (the Flight server): keeps, and lets go, offsets where the relay's own consumers joined mid-epoch as
 * boundaries of the producer's next epochs. Not user API: this package is exported only to the project's
 * modules.
 *
 * <p>Mechanism: {@link TensorProducer}'s static initializer installs the {@link Hooks} that reach its engine.
 */
public final class RelayBoundaries {
    private static final Installed<Hooks> HOOKS = new Installed<>(TensorProducer.class, "relay hooks");

    /** What {@link TensorProducer} installs. */
    public interface Hooks {
        UpstreamBoundaries.Answer keep(TensorProducer producer, int consumerId, long epoch, long sample);

        void release(TensorProducer producer, int consumerId, long sample);
    }

    private RelayBoundaries() {}

    /**
     * For consumer {@code consumerId} of {@code producer}, which relays its stream to consumers of its own: keeps
     * offset {@code sample} of epoch {@code epoch}, where one of them joined the relay, as a boundary of the
     * producer's next epochs, so that its epochs are exact too.
     */
    public static UpstreamBoundaries.Answer keep(TensorProducer producer, int consumerId, long epoch, long sample) {
        return HOOKS.get().keep(producer, consumerId, epoch, sample);
    }

    /** The relay's consumer that joined at {@code sample} left: the boundary kept for it goes. */
    public static void release(TensorProducer producer, int consumerId, long sample) {
        HOOKS.get().release(producer, consumerId, sample);
    }

    /** Called once, by {@link TensorProducer}'s static initializer. */
    public static void install(Hooks installed) {
        HOOKS.install(installed);
    }
}
