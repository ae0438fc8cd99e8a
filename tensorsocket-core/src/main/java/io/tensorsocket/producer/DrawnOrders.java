package io.tensorsocket.producer;

import java.util.TreeMap;

/**
 * The sample orders the producer drew for its epochs, kept for the lanes that load the same epochs again behind
 * the main stream (so a consumer in a lane gets exactly the epochs it would have got). An order is kept while a lane
 * may still need it: from the oldest epoch a lane serves, or a consumer still to be moved may stand in, on.
 *
 * <p>Not thread-safe: the producer's lock guards it.
 */
final class DrawnOrders {
    private final TreeMap<Long, int[]> orders = new TreeMap<>();

    /** The producer drew {@code order} for epoch {@code epoch}. */
    void drew(long epoch, int[] order) {
        orders.put(epoch, order);
    }

    /** The order drawn for {@code epoch}, or null if it is not drawn yet (or was forgotten). */
    int[] order(long epoch) {
        return orders.get(epoch);
    }

    /** Forgets the orders of the epochs before {@code epoch}. */
    void forgetBefore(long epoch) {
        orders.headMap(epoch).clear();
    }
}
