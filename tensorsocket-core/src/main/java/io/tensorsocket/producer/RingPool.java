package io.tensorsocket.producer;

import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.rings.Futex;
import java.util.ArrayDeque;

/**
 * The producer's descriptor rings: which are free and which consumer holds which. A ring goes to a
 * consumer that asks for one while any is free; a leaving consumer's ring goes back to the end of the
 * queue, so it is given again as late as possible. Used under the producer's lock.
 */
final class RingPool {
    /** The rings, or null: every consumer is served over its socket. */
    private final DescriptorRings rings;

    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final Futex futex;

    /** A pool of {@code rings}, or an empty one for null. */
    RingPool(DescriptorRings rings) {
        this.rings = rings;
        this.futex = rings != null ? new Futex() : null;
        for (int i = 0; rings != null && i < rings.rings(); i++) {
            free.addLast(i);
        }
    }

    /** Gives {@code s} a ring, starting it empty, if it asked for one and one is free. */
    void give(ConsumerSession s) {
        if (s.hello.ring() && !free.isEmpty()) {
            int index = free.pollFirst();
            DescriptorRings.Writer w = rings.writer(index);
            w.claim(s.id);
            s.events = new Outlet.Ring(w, index, futex);
        }
    }

    /**
     * Takes back a leaving consumer's ring. Its entries stay readable (a consumer that got END reads its last
     * batches after the producer let it go) until the ring is given to someone else.
     */
    void takeBack(ConsumerSession s) {
        if (s.events instanceof Outlet.Ring r) {
            r.writer().knock(futex); // a consumer asleep on it looks at its socket, which now says why
            free.addLast(r.ringIndex());
            s.events = new Outlet.Socket(s.channel);
        }
    }
}
