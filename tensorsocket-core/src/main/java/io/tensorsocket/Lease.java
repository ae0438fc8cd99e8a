package io.tensorsocket;

import java.lang.foreign.Arena;

/**
 * The validity of one batch's memory. Views handed to the user are scoped to {@link #scope()}; closing
 * the lease closes that scope, so every later access through a view fails in the JDK itself, and the
 * typed accessors of {@link Tensor} fail earlier with a {@link BatchReleasedException} that says which
 * batch it was.
 */
final class Lease {
    /** A lease that never ends, for batches whose memory the caller owns. */
    static final Lease OWNED = new Lease(null, "an owned batch");

    private final Arena scope;
    private final String what;
    private volatile boolean released;

    private Lease(Arena scope, String what) {
        this.scope = scope;
        this.what = what;
    }

    /** A fresh lease with its own scope, for {@code what} (used in error messages). */
    static Lease open(String what) {
        return new Lease(Arena.ofShared(), what);
    }

    Arena scope() {
        return scope;
    }

    boolean isReleased() {
        return released;
    }

    void check() {
        if (released) {
            throw new BatchReleasedException(what + " was released (closed, or the next batch was requested);"
                    + " copy the data you need to keep before moving on");
        }
    }

    /**
     * Ends the lease; idempotent.
     *
     * @return whether this call ended it (false if it had ended already or never ends)
     */
    boolean release() {
        if (scope == null) {
            return false;
        }
        synchronized (this) {
            if (released) {
                return false;
            }
            released = true;
            scope.close();
            return true;
        }
    }
}
