package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Runs a test step that makes a producer fail on purpose and keeps the producer's error log (with its
 * stack trace) out of the build output, where it would read like a real failure: the log is captured
 * (slf4j-simple writes to whatever {@code System.err} is at the time) and checked instead.
 */
final class ProvokedFailureLog {
    interface Step {
        void run() throws Exception;
    }

    private ProvokedFailureLog() {}

    /** Runs {@code step} with the log captured, and asserts the log holds {@code expected}. */
    static void expect(String expected, Step step) throws Exception {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream original = System.err;
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            step.run();
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains(expected), "the producer's log of the provoked failure: " + log);
        System.out.println("(a producer failure provoked on purpose was logged as expected: " + expected + ")");
    }
}
