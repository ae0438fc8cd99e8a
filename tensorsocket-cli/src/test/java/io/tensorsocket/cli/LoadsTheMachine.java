package io.tensorsocket.cli;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * A process-test class whose processes take most of the machine for a minute or two (a Ray cluster, the benchmarks,
 * launch races of a feeder and three trainers): such classes run one at a time, beside the lighter classes, where
 * {@code @Isolated} would stop everything else. What they check does not depend on the machine's load; a class whose
 * checks are timed against a window keeps {@code @Isolated}. Give such a class an {@code @Order} by its length, the
 * longest first, so that their chain starts with the suite.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ResourceLock(value = LoadsTheMachine.MACHINE, mode = ResourceAccessMode.READ_WRITE)
@interface LoadsTheMachine {
    /** The lock such classes share. */
    String MACHINE = "tensorsocket.machine";
}
