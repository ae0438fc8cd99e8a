package io.tensorsocket.producer;

import io.tensorsocket.StartMode;
import io.tensorsocket.spi.UpstreamBoundaries;
import io.tensorsocket.stream.StartPoint;
import io.tensorsocket.stream.StreamGeometry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What relays add to mid-epoch joins, in both directions ({@link UpstreamBoundaries}). As a relay, a producer asks
 * its upstream to keep the boundary where its own consumers join, and starts them by the answer: exact if kept, at
 * the next epoch start if the upstream drew that epoch's order already, rolling if it cannot keep boundaries. As
 * the upstream of a relay, a producer that chooses its own order keeps such boundaries on the relay's behalf while
 * the next epoch's order is not drawn yet.
 *
 * <p>Used under the core's lock.
 */
final class RelayJoins {
    private static final Logger log = LoggerFactory.getLogger(ProducerCore.class);

    private final ServingRules rules;
    private final StreamGeometry geometry;
    private final Attached consumers;
    /** The relayed stream's producer, asked to keep mid-epoch joiners' boundaries; null for a producer of its own order. */
    private UpstreamBoundaries upstream;
    /** The epoch whose order was drawn last, -1 before the first. */
    private long drawnEpoch = -1;

    RelayJoins(ServingRules rules, StreamGeometry geometry, Attached consumers) {
        this.rules = rules;
        this.geometry = geometry;
        this.consumers = consumers;
    }

    /** This producer relays {@code upstream}'s stream. */
    void relay(UpstreamBoundaries upstream) {
        this.upstream = upstream;
    }

    /** The order of epoch {@code epoch} is being drawn: boundaries for it can no longer be kept. */
    void drew(long epoch) {
        drawnEpoch = epoch;
    }

    /**
     * A relay's start for {@code n} consumers joining at {@code start} together: an exact mid-epoch start stays exact
     * if the upstream keeps its boundary, becomes the next epoch start if the upstream drew its next order already
     * (rolling if this was the last epoch), and rolls if the upstream cannot keep boundaries.
     */
    StartPoint throughUpstream(StartPoint start, int n) {
        if (upstream == null || start.mode() != StartMode.EXACT) {
            return start;
        }
        if (start.sample() == 0 || start.sample() >= geometry.samplesPerEpoch()) {
            // a join right at an epoch's start or end: no boundary to keep, the epoch starts there
            long epoch = start.sample() == 0 ? start.epoch() : start.epoch() + 1;
            if (rules.epochs() == 0 || epoch < rules.epochs()) {
                return StartPoint.of(StartMode.EPOCH_START, epoch, 0);
            }
        }
        UpstreamBoundaries.Answer answer = upstream.keep(start.epoch(), (int) start.sample(), n);
        StartPoint rolling = StartPoint.of(StartMode.ROLLING, start.epoch(), start.sample());
        return switch (answer) {
            case KEPT -> start;
            case TOO_LATE -> {
                log.info(
                        "the upstream drew its next epoch's order before it could keep the boundary at sample {} of"
                                + " epoch {}: the joiner starts at the next epoch start",
                        start.sample(),
                        start.epoch());
                yield rules.epochs() == 0 || start.epoch() + 1 < rules.epochs()
                        ? StartPoint.of(StartMode.EPOCH_START, start.epoch() + 1, 0)
                        : rolling;
            }
            case UNAVAILABLE -> {
                log.info(
                        "the upstream cannot keep the boundary at sample {} of epoch {}: the joiner rolls",
                        start.sample(),
                        start.epoch());
                yield rolling;
            }
        };
    }

    /** A consumer that started at {@code start} left: the upstream boundary kept for it goes. */
    void releaseUpstream(StartPoint start) {
        if (upstream != null && start != null && start.mode() == StartMode.EXACT) {
            upstream.release((int) start.sample());
        }
    }

    /**
     * For consumer {@code s} (null if none such is attached), which relays this stream: keeps offset {@code sample} of
     * epoch {@code epoch} as a boundary of the next epochs for one of the relay's own consumers, which joined the relay
     * there. It can while the order of epoch {@code epoch + 1} is not drawn yet.
     *
     * @return KEPT; TOO_LATE if that order is drawn (or {@code epoch} is not the one being served); UNAVAILABLE if
     *         this producer does not choose its order (it is a relay itself, or its source fixes it), no such
     *         consumer is attached, or the offset is not inside an epoch
     */
    UpstreamBoundaries.Answer keepFor(ConsumerSession s, long epoch, long sample) {
        // a relay does not choose its order, so the consumers of a relay of a relay roll
        boolean choosesOrder = rules.midEpoch() == StartMode.EXACT && upstream == null;
        if (!choosesOrder || s == null || sample <= 0 || sample >= geometry.samplesPerEpoch()) {
            return UpstreamBoundaries.Answer.UNAVAILABLE;
        }
        if (epoch != drawnEpoch) {
            return UpstreamBoundaries.Answer.TOO_LATE;
        }
        consumers.keepForRelay(s, (int) sample);
        log.info(
                "{} relays the stream: keeping its joiner's boundary at sample {} from epoch {} on",
                s.describe(),
                sample,
                epoch + 1);
        return UpstreamBoundaries.Answer.KEPT;
    }

    /** The relay's consumer {@code s} (null if none such is attached) that joined at {@code sample} left. */
    void releaseFor(ConsumerSession s, long sample) {
        boolean inside = sample > 0 && sample < geometry.samplesPerEpoch();
        if (s != null && inside && consumers.releaseForRelay(s, (int) sample)) {
            log.info("{} relays the stream: lets its joiner's boundary at sample {} go", s.describe(), sample);
        }
    }
}
