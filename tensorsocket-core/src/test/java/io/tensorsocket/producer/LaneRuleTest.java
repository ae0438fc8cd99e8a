package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** When a consumer has held the others back long enough to move to a lane: within one window, not across windows. */
class LaneRuleTest {
    private static final long MS = 1_000_000L;

    @Test
    void waitsAddUpWithinAWindowToTheLine() {
        LaneRule<String> r = new LaneRule<>();
        assertFalse(r.waitedFor("slow", 100 * MS, 0));
        assertFalse(r.waitedFor("other", 200 * MS, 10 * MS), "each consumer counts its own waits");
        assertFalse(r.waitedFor("slow", 100 * MS, 20 * MS));
        assertTrue(r.waitedFor("slow", 50 * MS, 30 * MS), "250 ms within the window");
    }

    @Test
    void oneThatJustRejoinedIsLeftAloneForAWindow() {
        LaneRule<String> r = new LaneRule<>();
        r.rejoined("equal", 0);
        assertFalse(r.waitedFor("equal", 300 * MS, MS), "it just caught up: its waits do not count");
        assertFalse(r.waitedFor("equal", 300 * MS, LaneRule.WINDOW_NANOS - MS));
        assertTrue(r.waitedFor("equal", 300 * MS, LaneRule.WINDOW_NANOS + MS), "a window later they do");
    }

    @Test
    void oneThatCouldNotBeGivenALaneIsJudgedAgainAWindowLater() {
        LaneRule<String> r = new LaneRule<>();
        assertTrue(r.waitedFor("slow", 300 * MS, 0));
        r.refused("slow", MS);
        assertFalse(r.waitedFor("slow", 300 * MS, 2 * MS), "not judged again at every wait");
        assertFalse(r.waitedFor("slow", 300 * MS, LaneRule.WINDOW_NANOS));
        assertTrue(r.waitedFor("slow", 300 * MS, LaneRule.WINDOW_NANOS + 2 * MS), "a window later it is");
    }

    @Test
    void aNewWindowForgetsOldWaitsAndSoDoesAMove() {
        LaneRule<String> r = new LaneRule<>();
        assertFalse(r.waitedFor("bursty", 200 * MS, 0));
        assertFalse(r.waitedFor("bursty", 200 * MS, LaneRule.WINDOW_NANOS), "the first 200 ms are in an older window");
        assertTrue(r.waitedFor("bursty", 100 * MS, LaneRule.WINDOW_NANOS + MS));
        r.forget("bursty");
        assertFalse(r.waitedFor("bursty", 100 * MS, LaneRule.WINDOW_NANOS + 2 * MS));
    }
}
