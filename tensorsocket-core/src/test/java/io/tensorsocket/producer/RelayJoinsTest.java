package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tensorsocket.StartMode;
import io.tensorsocket.spi.UpstreamBoundaries;
import io.tensorsocket.stream.StartPoint;
import io.tensorsocket.stream.StreamGeometry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A relay's joiners, started by what its upstream can keep; a join at an epoch's very edge is that epoch's start. */
class RelayJoinsTest {
    private static final long SAMPLES = 3000;

    private final List<Long> asked = new ArrayList<>();

    private RelayJoins relay(long epochs, UpstreamBoundaries.Answer answer) {
        ServingRules rules = new ServingRules(
                SAMPLES,
                0,
                epochs,
                2,
                1,
                Duration.ofSeconds(5),
                Duration.ofSeconds(5),
                1,
                Duration.ZERO,
                "r",
                StartMode.EXACT,
                Duration.ofSeconds(30),
                true);
        StreamGeometry geometry = new StreamGeometry(SAMPLES, 50);
        RelayJoins joins =
                new RelayJoins(rules, geometry, new Attached(new SlotTable(8), geometry, () -> {}, (s, w) -> {}));
        joins.relay(new UpstreamBoundaries() {
            @Override
            public Answer keep(long epoch, int offset, int n) {
                asked.add((long) offset);
                return answer;
            }

            @Override
            public void release(int offset) {}
        });
        return joins;
    }

    @Test
    void aJoinInsideAnEpochIsWhatTheUpstreamAnswers() {
        StartPoint mid = StartPoint.of(StartMode.EXACT, 14, 1200);
        assertEquals(mid, relay(0, UpstreamBoundaries.Answer.KEPT).throughUpstream(mid, 1));
        assertEquals(
                StartPoint.of(StartMode.EPOCH_START, 15, 0),
                relay(0, UpstreamBoundaries.Answer.TOO_LATE).throughUpstream(mid, 1));
        assertEquals(
                StartPoint.of(StartMode.ROLLING, 14, 1200),
                relay(0, UpstreamBoundaries.Answer.UNAVAILABLE).throughUpstream(mid, 1));
        assertEquals(List.of(1200L, 1200L, 1200L), asked);
    }

    @Test
    void aJoinAtAnEpochsEdgeStartsThatEpochWithoutAskingTheUpstream() {
        // joined when the relay had published all of epoch 14 and nothing of 15 (once seen as rolling at sample 3000)
        RelayJoins joins = relay(0, UpstreamBoundaries.Answer.UNAVAILABLE);
        assertEquals(
                StartPoint.of(StartMode.EPOCH_START, 15, 0),
                joins.throughUpstream(StartPoint.of(StartMode.EXACT, 14, SAMPLES), 1));
        assertEquals(
                StartPoint.of(StartMode.EPOCH_START, 14, 0),
                joins.throughUpstream(StartPoint.of(StartMode.EXACT, 14, 0), 1));
        assertEquals(List.of(), asked, "no boundary to keep");
        assertEquals(
                StartPoint.of(StartMode.ROLLING, 2, SAMPLES),
                relay(3, UpstreamBoundaries.Answer.UNAVAILABLE)
                        .throughUpstream(StartPoint.of(StartMode.EXACT, 2, SAMPLES), 1),
                "after the last epoch of a finite stream there is none to start");
    }
}
