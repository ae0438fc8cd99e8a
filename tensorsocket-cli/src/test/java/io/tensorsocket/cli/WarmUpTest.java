package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class WarmUpTest {

    @Test
    void neverEndsBeforeItsMinimumAndAlwaysByItsMaximum() {
        long t = System.nanoTime();
        WarmUp w = new WarmUp(Duration.ofMillis(1500), Duration.ofSeconds(10));
        assertFalse(w.over(t + 1_100_000_000L), "a window has passed, but not the minimum");
        assertFalse(w.over(t + 1_400_000_000L));
        assertTrue(w.over(t + 11_000_000_000L), "past the maximum, whatever the JIT does");
        assertTrue(w.over(t + 11_500_000_000L), "and it stays over");
        assertTrue(w.seconds() > 10 && w.seconds() <= 11, "lasted " + w.seconds());
    }

    @Test
    void aMaximumBelowTheMinimumWins() {
        long t = System.nanoTime();
        WarmUp w = new WarmUp(Duration.ofSeconds(5), Duration.ofMillis(200));
        assertFalse(w.over(t));
        assertTrue(w.over(t + 300_000_000L));
    }
}
