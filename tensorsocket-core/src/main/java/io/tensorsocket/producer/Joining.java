package io.tensorsocket.producer;

import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.ProducerStream;
import io.tensorsocket.stream.StartPoint;
import io.tensorsocket.stream.StreamGeometry;
import java.util.concurrent.locks.Condition;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer's arrival: whether it may join ({@link Admission}), where it starts (as a relay's upstream allows,
 * {@link RelayJoins}), and its welcome, sent with the retained batches it starts with. The welcome and the retained
 * batches are sent under the core's lock, so no batch published meanwhile can slip in before them. The ranks of a
 * job arrive through {@link JobFormation}, which admits them through this class once the job formed.
 *
 * <p>Used under the core's lock.
 */
final class Joining implements JobFormation.Joins {
    private static final Logger log = LoggerFactory.getLogger(ProducerCore.class);

    private final ServingRules rules;
    private final ProducerStream stream;
    private final Admission admission;
    private final StreamGeometry geometry;
    private final SlotTable slots;
    private final Attached consumers;
    private final RelayJoins relays;
    private final ServingState state;
    private final Condition changed;

    Joining(
            ServingRules rules,
            ProducerStream stream,
            Admission admission,
            StreamGeometry geometry,
            SlotTable slots,
            Attached consumers,
            RelayJoins relays,
            ServingState state,
            Condition changed) {
        this.rules = rules;
        this.stream = stream;
        this.admission = admission;
        this.geometry = geometry;
        this.slots = slots;
        this.consumers = consumers;
        this.relays = relays;
        this.state = state;
        this.changed = changed;
    }

    /**
     * Registers a consumer and decides where it starts.
     *
     * @return null if the consumer was refused (an error was sent)
     */
    ConsumerSession join(
            int id,
            MessageChannel channel,
            Message.Hello hello,
            String user,
            Function<StartPoint, Message.Welcome> welcome) {
        Admission.Verdict verdict = admit(hello);
        if (verdict instanceof Admission.Verdict.Refused(Message.Error refusal)) {
            channel.sendQuietly(refusal);
            channel.close();
            return null;
        }
        StartPoint start = relays.throughUpstream(((Admission.Verdict.Admitted) verdict).start(), 1);
        ConsumerSession s = welcome(id, channel, hello, user, start, welcome);
        if (s == null) {
            relays.releaseUpstream(start);
        }
        return s;
    }

    @Override
    public Message.Error refusalWhileClosing() {
        return admission.refusalWhileClosing(state);
    }

    @Override
    public Admission.Verdict admit(Message.Hello hello) {
        if (rules.epochs() > 0 && stream.nextEpoch() >= rules.epochs()) {
            state.streamEnded = true;
        }
        return admission.decide(stream, hello.startPolicy(), state);
    }

    @Override
    public StartPoint throughUpstream(StartPoint start, int n) {
        return relays.throughUpstream(start, n);
    }

    @Override
    public void releaseUpstream(StartPoint start) {
        relays.releaseUpstream(start);
    }

    /** Welcomes a consumer admitted at {@code start} and hands it the retained batches; null if it cannot be reached. */
    @Override
    public ConsumerSession welcome(
            int id,
            MessageChannel channel,
            Message.Hello hello,
            String user,
            StartPoint start,
            Function<StartPoint, Message.Welcome> welcome) {
        ConsumerSession s = new ConsumerSession(id, channel, hello);
        s.user = user;
        s.position = geometry.position(start.epoch(), start.sample());
        s.start = start;
        s.startMode = start.mode();
        consumers.prepare(s);
        if (!s.send(welcome.apply(start).forConsumer(id, s.events.ringIndex()))) {
            consumers.unprepare(s);
            channel.close();
            return null;
        }
        consumers.add(s);
        if (state.firstAttachNanos == 0) {
            state.firstAttachNanos = System.nanoTime();
        }
        for (long q = start.firstRetained(); q <= start.lastRetained(); q++) {
            consumers.hand(s, slots.ready(slots.batch(q)));
        }
        log.info(
                "{} joined at {} (epoch {}, sample {}{})",
                s.describe(),
                start.mode().label(),
                start.epoch(),
                start.sample(),
                start.epoch() > stream.nextEpoch() ? ", waiting for that epoch to start" : "");
        changed.signalAll();
        return s;
    }

    @Override
    public void detach(ConsumerSession s, String why) {
        consumers.detach(s, why);
    }
}
