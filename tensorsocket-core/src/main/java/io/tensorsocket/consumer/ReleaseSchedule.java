package io.tensorsocket.consumer;

import io.tensorsocket.Batch;
import io.tensorsocket.lease.BatchLeases;
import io.tensorsocket.lease.Lease;

/**
 * When a consumer's handed-out batch is released. The rule: a batch is released when the next one is asked
 * for; if the consumer had to wait for that next one (it is faster than the producer), the batch is retired
 * instead: its lease ends at once (its typed accessors refuse), but its JDK scope closes, and its slots go
 * back to the producer, only at the consumer's following call, before it waits again, or before memory its
 * views read is reused. A scope close is a handshake with every thread of the JVM, and telling the producer
 * wakes it (on a machine with few cores it takes this thread's core): neither may lie between an awaited
 * batch's arrival and its handing out. A consumer that did not wait releases at once, since the producer
 * may be waiting for that very slot.
 *
 * <p>Used under the consumer's lock.
 */
final class ReleaseSchedule {
    private static final BatchLeases LEASES = BatchLeases.get();

    private Batch current;
    private Lease retired;
    private boolean waited;

    /** The batch about to be handed out had to be waited for. */
    void waited() {
        waited = true;
    }

    /**
     * {@code b} is handed out. Returns whether what it was made of may be given back now (the consumer did
     * not wait for it); otherwise that happens at the next call.
     */
    boolean handOut(Batch b) {
        current = b;
        boolean releaseNow = !waited;
        waited = false;
        return releaseNow;
    }

    /** The batch handed out last, if still held: released, or retired if it had been waited for. */
    void releaseCurrent() {
        Batch b = current;
        current = null;
        closeRetired();
        if (b != null && waited) {
            retired = LEASES.lease(b);
            LEASES.retire(b);
        } else if (b != null) {
            b.close();
        }
    }

    /** Whether a retired batch's scope is still open. */
    boolean hasRetired() {
        return retired != null;
    }

    /** Closes the retired batch's scope, after which its slots may go back. */
    void closeRetired() {
        Lease r = retired;
        retired = null;
        if (r != null) {
            r.closeScope();
        }
    }

    /**
     * Whether a batch still held (handed out, or retired with its scope open) is confined to another thread: closing
     * from this thread cannot close its scope, so memory its views read must stay mapped.
     */
    boolean heldByAnotherThread() {
        Batch b = current;
        return (b != null && LEASES.lease(b).confinedElsewhere()) || (retired != null && retired.confinedElsewhere());
    }

    /** Releases everything, for the consumer's close. */
    void closeAll() {
        Batch b = current;
        current = null;
        if (b != null) {
            b.close();
        }
        closeRetired();
    }
}
