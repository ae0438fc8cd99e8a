package io.tensorsocket.cli;

/** What messages tell the user to type next. */
final class Hints {
    private Hints() {}

    /**
     * The command the user started this program with: bin/tensorsocket passes the path it was called by in
     * {@code TENSORSOCKET_LAUNCHER}; without it (a JVM started by hand) the command's name.
     */
    static String launcher() {
        String l = System.getenv("TENSORSOCKET_LAUNCHER");
        return l == null || l.isBlank() ? "tensorsocket" : l;
    }
}
