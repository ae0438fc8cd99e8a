package io.tensorsocket.producer;

import io.tensorsocket.StartPolicy;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.JoinRule;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StartPoint;

/**
 * Whether a consumer that says HELLO may join, and where it starts: the {@link JoinRule}'s start, unless the
 * producer is shutting down, has served its last epoch, or (for a consumer that waits for the next epoch
 * start) is in its last epoch. A refusal is the PRODUCER_CLOSED error the consumer is sent, saying what to do.
 */
final class Admission {

    /** A consumer's admission: where it starts, or why it may not. */
    sealed interface Verdict {
        record Admitted(StartPoint start) implements Verdict {}

        record Refused(Message.Error error) implements Verdict {}
    }

    private final String producer;
    private final long epochs;
    private final JoinRule rule;

    /** For producer {@code producer} whose stream ends before epoch {@code epochs} (0: no end). */
    Admission(String producer, long epochs, JoinRule rule) {
        this.producer = producer;
        this.epochs = epochs;
        this.rule = rule;
    }

    /**
     * The verdict for a consumer asking with {@code policy}, the stream being at {@code stream}; {@code closing} is
     * the producer's serving state, whose refusal a consumer gets once the producer shuts down.
     */
    Verdict decide(ProducerStream stream, StartPolicy policy, ServingState closing) {
        Message.Error refusal = refusalWhileClosing(closing);
        if (refusal != null) {
            return new Verdict.Refused(refusal);
        }
        if (closing.streamEnded || closing.epochsPublished) {
            return refused("producer '" + producer + "' has finished its " + epochs + " epochs (published them all;"
                    + " its consumers may still be reading them), so no epoch is left to start: start consumers"
                    + " together with the producer (a finite stream waits its start grace for them), or run it for"
                    + " more epochs (0: until stopped)");
        }
        StartPoint start = rule.decide(stream, policy);
        if (epochs > 0 && start.epoch() >= epochs) {
            return refused(
                    "producer '" + producer + "' is in its last epoch (" + (epochs - 1) + " of 0.." + (epochs - 1)
                            + "), so no epoch starts again for a consumer that waits for the next epoch start; connect without"
                            + " waiting for it (it then starts rolling), or restart the producer with more epochs");
        }
        return new Verdict.Admitted(start);
    }

    /** What a consumer asking to join is told while the producer closes ({@code closing}), or null while it serves. */
    Message.Error refusalWhileClosing(ServingState closing) {
        return closing.closedReason == null ? null : closing.refusalWhileClosing(producer);
    }

    private static Verdict refused(String why) {
        return new Verdict.Refused(new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, why));
    }
}
