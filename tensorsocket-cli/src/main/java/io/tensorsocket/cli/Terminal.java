package io.tensorsocket.cli;

import java.io.Console;

/** Whether output goes to a person at a terminal, and the little drawing done there. */
final class Terminal {
    static final String HOME_AND_CLEAR = "\033[H\033[2J";

    private Terminal() {}

    /** True when stdout and stderr are a terminal (not a pipe or file), so redrawing in place is safe. */
    @SuppressWarnings("SystemConsoleNull") // null-safe for any launcher that replaces the console
    static boolean isInteractive() {
        Console c = System.console();
        return c != null && c.isTerminal() && System.getenv("TERM") != null && !"dumb".equals(System.getenv("TERM"));
    }

    /** A bar of {@code width} cells filled to {@code fraction} (0 to 1). */
    static String bar(double fraction, int width) {
        double f = Double.isFinite(fraction) ? Math.max(0, Math.min(1, fraction)) : 0;
        int full = (int) Math.round(f * width);
        return "[" + "#".repeat(full) + ".".repeat(width - full) + "]";
    }

    /**
     * {@code text} broken at spaces into lines of at most {@code width} characters, every line after the first
     * starting with {@code indent}; a word longer than a line (a long path) gets a line of its own, unbroken.
     * After {@code maxLines} lines the rest is left out and the last line ends in "...".
     */
    static String wrap(String text, int width, String indent, int maxLines) {
        StringBuilder out = new StringBuilder();
        StringBuilder line = new StringBuilder();
        int lines = 1;
        for (String word : text.strip().split("\\s+")) {
            if (!line.isEmpty() && line.length() + 1 + word.length() > width) {
                if (lines == maxLines) {
                    return out.append(line).append(" ...").toString();
                }
                out.append(line).append('\n').append(indent);
                line.setLength(0);
                lines++;
            }
            if (!line.isEmpty()) {
                line.append(' ');
            }
            line.append(word);
        }
        return out.append(line).toString();
    }
}
