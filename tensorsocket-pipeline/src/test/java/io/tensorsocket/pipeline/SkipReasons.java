package io.tensorsocket.pipeline;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Prints every skipped test and why (a JUnit assumption's message or a disabled test's reason) on the build
 * output, where Surefire itself only counts them: a test skipped for a missing package must say which.
 * Registered in META-INF/services; the same listener sits in each module whose tests can be skipped.
 */
public final class SkipReasons implements TestExecutionListener {

    @Override
    public void executionSkipped(TestIdentifier test, String reason) {
        System.out.println("SKIPPED " + name(test) + ": " + reason);
    }

    @Override
    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
        if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
            System.out.println("SKIPPED " + name(test) + ": "
                    + result.getThrowable().map(Throwable::getMessage).orElse("an assumption did not hold"));
        }
    }

    private static String name(TestIdentifier test) {
        return test.getSource()
                .filter(MethodSource.class::isInstance)
                .map(MethodSource.class::cast)
                .map(m -> m.getJavaClass().getSimpleName() + "." + m.getMethodName())
                .orElse(test.getDisplayName());
    }
}
