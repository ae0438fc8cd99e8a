package io.tensorsocket.cli;

/** Whether output goes to a person at a terminal, and the little drawing done there. */
final class Terminal {
    static final String HOME_AND_CLEAR = "\033[H\033[2J";

    private Terminal() {
    }

    /** True when stdout and stderr are a terminal (not a pipe or file), so redrawing in place is safe. */
    static boolean isInteractive() {
        java.io.Console c = System.console();
        return c != null && c.isTerminal() && System.getenv("TERM") != null && !"dumb".equals(System.getenv("TERM"));
    }

    /** A bar of {@code width} cells filled to {@code fraction} (0 to 1). */
    static String bar(double fraction, int width) {
        double f = Double.isFinite(fraction) ? Math.max(0, Math.min(1, fraction)) : 0;
        int full = (int) Math.round(f * width);
        return "[" + "#".repeat(full) + ".".repeat(width - full) + "]";
    }
}
