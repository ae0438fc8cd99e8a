package io.tensorsocket.lease;

import io.tensorsocket.BatchReleasedException;
import io.tensorsocket.Tensor;
import java.lang.foreign.Arena;

/**
 * The validity of one batch's memory. Views handed to the user are scoped to {@link #scope()}; closing
 * that scope makes every later access through a view fail in the JDK itself, and the typed accessors of
 * {@link Tensor} fail from the lease's release on with a {@link BatchReleasedException} that says which
 * batch it was.
 */
public final class Lease {
    /** A lease that never ends, for batches whose memory the caller owns. */
    public static final Lease OWNED = new Lease(null, null, "an owned batch");

    private final Arena scope;
    /** The thread a confined scope belongs to, which alone can close it; null for a shared scope. */
    private final Thread owner;

    private final String what;
    private volatile boolean released;

    private Lease(Arena scope, Thread owner, String what) {
        this.scope = scope;
        this.owner = owner;
        this.what = what;
    }

    /** A fresh lease with its own scope, which any thread may use, for {@code what} (used in error messages). */
    public static Lease open(String what) {
        return open(what, false);
    }

    /**
     * A fresh lease for {@code what}; with {@code confined} its scope is usable by this thread only, and closing it
     * is cheap (a shared scope's close is a handshake with every thread of the JVM). A confined lease released
     * from another thread ends at once for the typed accessors, but its scope stays open.
     */
    public static Lease open(String what, boolean confined) {
        return confined
                ? new Lease(Arena.ofConfined(), Thread.currentThread(), what)
                : new Lease(Arena.ofShared(), null, what);
    }

    public Arena scope() {
        return scope;
    }

    public boolean isReleased() {
        return released;
    }

    public void check() {
        if (released) {
            throw new BatchReleasedException(what + " was released (closed, or the next batch was requested);"
                    + " copy the data you need to keep before moving on");
        }
    }

    /** Ends the lease and closes its scope; idempotent. */
    public boolean release() {
        return release(true);
    }

    /**
     * Ends the lease: the typed accessors refuse at once. With {@code closeScope} false the JDK scope stays
     * open until {@link #closeScope()}, for a consumer that must not spend a scope close (a handshake with
     * every thread of the JVM) between a batch's arrival and its handing out; it releases the memory only
     * after closing the scope, so a raw view never reads recycled bytes.
     *
     * @return whether this call ended it (false if it had ended already or never ends)
     */
    public boolean release(boolean closeScope) {
        if (scope == null) {
            return false;
        }
        synchronized (this) {
            if (released) {
                return false;
            }
            released = true;
        }
        if (closeScope) {
            closeScope();
        }
        return true;
    }

    /** Whether this lease's scope is confined to a thread other than the calling one, which alone can close it. */
    public boolean confinedElsewhere() {
        return owner != null && owner != Thread.currentThread();
    }

    /** Closes the scope of a released lease; idempotent. */
    public synchronized void closeScope() {
        if (released && scope.scope().isAlive() && !confinedElsewhere()) {
            scope.close();
        }
    }
}
