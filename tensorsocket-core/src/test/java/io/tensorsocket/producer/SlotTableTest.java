package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.stream.BatchPosition;
import io.tensorsocket.stream.JoinRule;
import io.tensorsocket.testing.RandomTrials;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The slot table against a model: batches go round the ring, a slot is free exactly when no holder of its
 * batch is left, releases and holds balance, and slots in use are those unpublished, held or in the window.
 */
class SlotTableTest {

    private static BatchPosition at(long seq) {
        return new BatchPosition(seq, 0, seq, seq * 4, 4);
    }

    @Test
    void batchesGoRoundTheRingAndASlotIsFreeOnceItsHoldersReleased() {
        SlotTable t = new SlotTable(3);
        for (long s = 0; s < 3; s++) {
            t.claim(s);
            t.published(at(s));
        }
        t.hold(0);
        t.hold(0);
        assertEquals(0, t.slotOf(3));
        assertFalse(t.isFree(0));
        assertThrows(IllegalStateException.class, () -> t.claim(3), "a held slot cannot be claimed");
        assertFalse(t.release(0));
        assertTrue(t.release(0), "the last holder frees it");
        assertThrows(IllegalStateException.class, () -> t.release(0), "released once too often");
        t.claim(3);
        assertEquals(3, t.seqIn(0));
        assertNull(t.batch(3), "claimed, not yet published");
        t.published(at(3));
        assertEquals(at(3), t.batch(3));
        assertThrows(IllegalStateException.class, () -> t.published(at(7)), "never claimed");
    }

    @Test
    void slotsInUseAreTheUnpublishedTheHeldAndTheWindow() {
        SlotTable t = new SlotTable(6);
        JoinRule window = new JoinRule(2);
        assertEquals(0, t.inUse(-1, window));
        for (long s = 0; s < 5; s++) {
            t.claim(s);
        }
        for (long s = 0; s < 4; s++) {
            t.published(at(s));
        }
        t.hold(0);
        // published up to 3: 0 held, 2 and 3 in the window, 4 claimed and unpublished; 1 is free and idle
        assertEquals(4, t.inUse(3, window));
        t.release(0);
        assertEquals(3, t.inUse(3, window));
    }

    @Test
    void holdsAndReleasesBalanceUnderRandomTraffic() {
        RandomTrials.run(300, 0x5107_7ab1eL, r -> {
            int n = r.nextInt(2, 9);
            SlotTable t = new SlotTable(n);
            int[] holders = new int[n];
            List<ArrayDeque<Long>> held = new ArrayList<>();
            int consumers = r.nextInt(1, 5);
            for (int c = 0; c < consumers; c++) {
                held.add(new ArrayDeque<>());
            }
            long next = 0;
            for (int step = 0; step < 200; step++) {
                int slot = t.slotOf(next);
                if (r.nextBoolean() && t.isFree(slot)) {
                    assertEquals(0, holders[slot]);
                    t.claim(next);
                    t.published(at(next));
                    for (ArrayDeque<Long> h : held) {
                        if (r.nextBoolean()) {
                            t.hold(next);
                            holders[slot]++;
                            h.addLast(next);
                        }
                    }
                    next++;
                } else {
                    ArrayDeque<Long> h = held.get(r.nextInt(consumers));
                    if (!h.isEmpty()) {
                        long s = h.pollFirst();
                        int sl = t.slotOf(s);
                        assertEquals(--holders[sl] == 0, t.release(s));
                    }
                }
                for (int s = 0; s < n; s++) {
                    assertEquals(holders[s] == 0, t.isFree(s), "slot " + s);
                }
            }
        });
    }
}
