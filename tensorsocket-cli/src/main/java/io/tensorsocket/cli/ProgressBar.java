package io.tensorsocket.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A time-based progress bar on stderr. On a terminal it redraws one line in place and clears it before any
 * other output and at the end; elsewhere (a pipe, a file, CI) it prints a plain line when a phase starts and
 * every {@link #PLAIN_EVERY_S} seconds after, with no control characters, so a piped run is never silent long.
 */
final class ProgressBar implements AutoCloseable {
    static final double PLAIN_EVERY_S = 5;
    private static final int WIDTH = 120;

    private final PrintStream err = System.err;
    private final boolean tty;
    private final double plainEveryS;
    private final double totalSeconds;
    private final long started = System.nanoTime();
    private final Thread painter;
    private final Object lock = new Object();
    private volatile String phase = "";
    private volatile double phaseStarted;
    private volatile boolean closed;
    private boolean drawn;

    ProgressBar(double totalSeconds) {
        this(totalSeconds, Terminal.isInteractive(), PLAIN_EVERY_S);
    }

    ProgressBar(double totalSeconds, boolean tty, double plainEveryS) {
        this.totalSeconds = totalSeconds;
        this.tty = tty;
        this.plainEveryS = plainEveryS;
        this.painter =
                Thread.ofPlatform().daemon().name("tensorsocket-progress").start(this::paint);
    }

    void phase(String text) {
        phase = text;
        phaseStarted = elapsed();
        if (!tty) {
            synchronized (lock) {
                err.printf(Locale.ROOT, "[%5.1f s] %s%n", elapsed(), text);
                err.flush();
            }
        }
    }

    /** Prints {@code text} on stdout without leaving a half-drawn bar in front of it. */
    void println(String text) {
        synchronized (lock) {
            clear();
            System.out.println(text);
            System.out.flush();
        }
    }

    private double elapsed() {
        return (System.nanoTime() - started) / 1e9;
    }

    private int percent(double e) {
        return (int) Math.min(99, 100 * e / totalSeconds);
    }

    private void paint() {
        double lastPlain = 0;
        while (!closed) {
            double e = elapsed();
            synchronized (lock) {
                if (closed) {
                    return;
                }
                if (tty) {
                    String line = String.format(
                            Locale.ROOT,
                            "\r%s %3d%% %5.1f s  %s",
                            Terminal.bar(e / totalSeconds, 30),
                            percent(e),
                            e,
                            phase);
                    err.print(
                            line.length() > WIDTH
                                    ? line.substring(0, WIDTH)
                                    : line + " ".repeat(WIDTH - line.length()));
                    drawn = true;
                    err.flush();
                } else if (e - Math.max(lastPlain, phaseStarted) >= plainEveryS && !phase.isEmpty()) {
                    err.printf(Locale.ROOT, "[%5.1f s] %s: %d%% done%n", e, phase, percent(e));
                    err.flush();
                    lastPlain = e;
                }
            }
            try {
                Thread.sleep(250);
            } catch (InterruptedException ex) {
                return;
            }
        }
    }

    private void clear() {
        if (drawn) {
            err.print("\r" + " ".repeat(WIDTH + 1) + "\r");
            err.flush();
            drawn = false;
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            clear();
        }
        painter.interrupt();
        try {
            painter.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
