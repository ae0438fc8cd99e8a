package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tensorsocket.cli.SoakSchedule.Action;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SoakScheduleTest {

    /** A draw that always says "nothing happens" (the last of the ten outcomes). */
    private static final class AlwaysWait extends Random {
        @Override
        public int nextInt(int bound) {
            return bound - 1;
        }
    }

    @Test
    void aKillAndAStallNotDrawnByAThirdOfTheRunComeNextWhileTwoConsumersRun() {
        SoakSchedule s = new SoakSchedule(new AlwaysWait(), 0, 90, 0, 8);
        assertEquals(Action.WAIT, s.next(3, 3, 29)); // before a third: the draw
        assertEquals(Action.JOIN, s.next(1, 1, 30)); // owed, but one consumer alone is not killed or stalled
        assertEquals(Action.KILL, s.next(3, 3, 30));
        assertEquals(Action.STALL, s.next(2, 2, 31));
        assertEquals(Action.WAIT, s.next(3, 3, 32)); // both happened: the draws again
    }

    @Test
    void faultsDrawnEarlyOweNothing() {
        Random kills = new Random() {
            private int n;

            @Override
            public int nextInt(int bound) {
                return n++ == 0 ? 4 : n == 2 ? 6 : bound - 1; // KILL, then STALL, then WAIT
            }
        };
        SoakSchedule s = new SoakSchedule(kills, 0, 90, 0, 1);
        assertEquals(Action.KILL, s.next(3, 3, 1));
        assertEquals(Action.STALL, s.next(3, 3, 2));
        assertEquals(Action.WAIT, s.next(3, 3, 60));
    }
}
