package io.tensorsocket.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A time-based progress bar on stderr. On a terminal it redraws one line in place; elsewhere (a pipe, a
 * file, CI) it prints each phase once as a plain line, with no control characters.
 */
final class ProgressBar implements AutoCloseable {
    private final PrintStream err = System.err;
    private final boolean tty = Terminal.isInteractive();
    private final double totalSeconds;
    private final long started = System.nanoTime();
    private final Thread painter;
    private volatile String phase = "";
    private volatile boolean closed;

    ProgressBar(double totalSeconds) {
        this.totalSeconds = totalSeconds;
        this.painter = tty ? Thread.ofPlatform().daemon().start(this::paint) : null;
    }

    void phase(String text) {
        phase = text;
        if (!tty) {
            err.printf(Locale.ROOT, "[%5.1f s] %s%n", elapsed(), text);
            err.flush();
        }
    }

    private double elapsed() {
        return (System.nanoTime() - started) / 1e9;
    }

    private void paint() {
        while (!closed) {
            double e = elapsed();
            String line = String.format(Locale.ROOT, "\r%s %3.0f%% %5.1f s  %s", Terminal.bar(e / totalSeconds, 30),
                    Math.min(99, 100 * e / totalSeconds), e, phase);
            err.print(line.length() > 120 ? line.substring(0, 120) : line + " ".repeat(Math.max(0, 120 - line.length())));
            err.flush();
            try {
                Thread.sleep(250);
            } catch (InterruptedException ex) {
                return;
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        if (painter != null) {
            painter.interrupt();
            try {
                painter.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            err.print("\r" + " ".repeat(121) + "\r");
            err.flush();
        }
    }
}
