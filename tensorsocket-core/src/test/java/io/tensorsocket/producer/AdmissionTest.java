package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.JoinRule;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StreamGeometry;
import org.junit.jupiter.api.Test;

/** Who may join a producer of 3 epochs of 40 samples (batches of 10, rubber band 2), and what a refusal says. */
class AdmissionTest {
    private final Admission admission = new Admission("p", 3, new JoinRule(2));
    private final ProducerStream stream = new ProducerStream(new StreamGeometry(40, 10));

    private static String refusal(Admission.Verdict v) {
        Message.Error e = assertInstanceOf(Admission.Verdict.Refused.class, v).error();
        assertEquals(Message.ErrorCode.PRODUCER_CLOSED, e.code());
        return e.message();
    }

    private static ServingState serving() {
        return new ServingState();
    }

    private static ServingState closed(String reason, Message.Error told) {
        ServingState s = new ServingState();
        s.closedReason = reason;
        s.closedError = told;
        return s;
    }

    private static ServingState ended() {
        ServingState s = new ServingState();
        s.streamEnded = true;
        return s;
    }

    private void publish(long epochs) {
        long seq = 0;
        for (long e = 0; e < epochs; e++) {
            for (int b = 0; b < 4; b++) {
                stream.publish(seq++, 10);
            }
            stream.endEpoch(e);
        }
    }

    @Test
    void aConsumerJoinsWhereTheJoinRuleSays() {
        Admission.Verdict v = admission.decide(stream, StartPolicy.JOIN_NOW, serving());
        assertEquals(
                StartMode.EPOCH_START,
                assertInstanceOf(Admission.Verdict.Admitted.class, v).start().mode());
        stream.publish(0, 10);
        stream.publish(1, 10);
        stream.publish(2, 10);
        Admission.Verdict late = admission.decide(stream, StartPolicy.JOIN_NOW, serving());
        assertEquals(
                StartMode.ROLLING,
                assertInstanceOf(Admission.Verdict.Admitted.class, late).start().mode());
        Admission.Verdict next = admission.decide(stream, StartPolicy.NEXT_EPOCH_START, serving());
        assertEquals(
                1,
                assertInstanceOf(Admission.Verdict.Admitted.class, next).start().epoch());
    }

    @Test
    void aShuttingDownOrFinishedProducerRefusesSayingWhy() {
        assertTrue(refusal(admission.decide(stream, StartPolicy.JOIN_NOW, closed("stopped", null)))
                .contains("is shutting down (stopped)"));
        assertTrue(
                refusal(admission.decide(stream, StartPolicy.JOIN_NOW, ended())).contains("has finished its 3 epochs"));
    }

    @Test
    void aConsumerAskingAsTheLoaderFailsHearsTheFailureTheAttachedOnesHeard() {
        Message.Error told = new Message.Error(
                Message.ErrorCode.LOADER_FAILED, "the loader of producer 'p' failed in epoch 0: ValueError: bad");
        Message.Error e = assertInstanceOf(
                        Admission.Verdict.Refused.class,
                        admission.decide(stream, StartPolicy.JOIN_NOW, closed("loader failed", told)))
                .error();
        assertEquals(told, e);
        assertEquals(told, admission.refusalWhileClosing(closed("loader failed", told)));
        assertNull(admission.refusalWhileClosing(serving()));
    }

    @Test
    void waitingForAnEpochStartInTheLastEpochIsRefusedWithWhatToDo() {
        publish(2);
        stream.publish(8, 10);
        stream.publish(9, 10);
        stream.publish(10, 10); // out of the rubber band of epoch 2, the last
        String why = refusal(admission.decide(stream, StartPolicy.NEXT_EPOCH_START, serving()));
        assertTrue(why.contains("is in its last epoch (2 of 0..2)") && why.contains("connect without waiting"), why);
        assertInstanceOf(Admission.Verdict.Admitted.class, admission.decide(stream, StartPolicy.JOIN_NOW, serving()));
    }
}
