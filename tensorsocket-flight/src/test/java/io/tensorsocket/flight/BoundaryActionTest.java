package io.tensorsocket.flight;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.spi.UpstreamBoundaries;
import org.junit.jupiter.api.Test;

/** The boundary action's body and answer: what a relay sends round-trips, and a malformed one is refused saying why. */
class BoundaryActionTest {

    @Test
    void aRequestRoundTripsInItsTwentyOneBytes() {
        BoundaryAction.Request r = new BoundaryAction.Request(BoundaryAction.KEEP, 7, 12L, 5000L);
        byte[] body = BoundaryAction.encode(r);
        assertEquals(21, body.length);
        assertEquals(r, BoundaryAction.decode(body));
        for (UpstreamBoundaries.Answer a : UpstreamBoundaries.Answer.values()) {
            assertEquals(a, BoundaryAction.answer(BoundaryAction.answer(a)));
        }
        assertArrayEquals(new byte[] {0}, BoundaryAction.answer(UpstreamBoundaries.Answer.KEPT));
    }

    @Test
    void malformedBodiesAndAnswersAreRefusedSayingWhy() {
        IllegalArgumentException shortBody =
                assertThrows(IllegalArgumentException.class, () -> BoundaryAction.decode(new byte[20]));
        assertTrue(shortBody.getMessage().contains("21 bytes, not 20"), shortBody.getMessage());
        byte[] body = BoundaryAction.encode(new BoundaryAction.Request(BoundaryAction.RELEASE, 1, 0, 9));
        body[0] = 3;
        IllegalArgumentException op = assertThrows(IllegalArgumentException.class, () -> BoundaryAction.decode(body));
        assertTrue(op.getMessage().contains("unknown boundary op 3"), op.getMessage());
        IllegalArgumentException answer =
                assertThrows(IllegalArgumentException.class, () -> BoundaryAction.answer(new byte[] {9}));
        assertTrue(answer.getMessage().contains("one byte 0..2"), answer.getMessage());
    }
}
