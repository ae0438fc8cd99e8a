package io.tensorsocket.stream;

import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import java.util.ArrayList;
import java.util.List;

/**
 * Drives the stream model the way a producer and one consumer do, without any I/O: the producer publishes
 * {@code publishedBeforeJoin} batches (ending an epoch right after its last batch when
 * {@code epochEndedBeforeJoin}), the consumer joins, then iterates {@code consumerEpochs} epochs, the
 * producer publishing one more batch whenever the consumer needs it and ending the stream after
 * {@code producerEpochs} epochs (0 = never). Each batch is closed before the next is taken; with
 * {@code leaveAfter > 0} the consumer leaves each epoch after that many batches, skipping the rest.
 *
 * <p>The result lists what the consumer saw: its start, then every batch and release in order. The same
 * walk is written in Python (clients/python/tests/test_stream.py) over docs/test-vectors/scenarios.txt.
 */
record StreamSimulation(
        long samplesPerEpoch,
        int producerBatch,
        int rubberBand,
        int publishedBeforeJoin,
        boolean epochEndedBeforeJoin,
        int consumerBatch,
        boolean dropLast,
        int consumerEpochs,
        int producerEpochs,
        int leaveAfter,
        StartPolicy startPolicy,
        StartMode midEpoch,
        RankShare share) {

    StreamSimulation(
            long samplesPerEpoch,
            int producerBatch,
            int rubberBand,
            int publishedBeforeJoin,
            boolean epochEndedBeforeJoin,
            int consumerBatch,
            boolean dropLast,
            int consumerEpochs,
            int producerEpochs,
            int leaveAfter) {
        this(
                samplesPerEpoch,
                producerBatch,
                rubberBand,
                publishedBeforeJoin,
                epochEndedBeforeJoin,
                consumerBatch,
                dropLast,
                consumerEpochs,
                producerEpochs,
                leaveAfter,
                StartPolicy.JOIN_NOW,
                StartMode.ROLLING,
                RankShare.ALL);
    }

    /** One event the consumer saw. */
    sealed interface Event {}

    record Start(StartPoint start) implements Event {
        @Override
        public String toString() {
            return "start " + start.mode().label() + " epoch=" + start.epoch() + " sample=" + start.sample()
                    + " retained="
                    + (start.retainedCount() == 0 ? "-" : start.firstRetained() + ".." + start.lastRetained());
        }
    }

    record Taken(ConsumerStream.BatchPlan plan) implements Event {
        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("batch epoch=" + plan.epoch() + " index=" + plan.index() + " sample="
                    + plan.sampleStart() + " size=" + plan.samples() + " pieces=");
            for (int i = 0; i < plan.pieces().size(); i++) {
                ConsumerStream.Piece p = plan.pieces().get(i);
                sb.append(i == 0 ? "" : ",")
                        .append(p.seq())
                        .append(':')
                        .append(p.offset())
                        .append('+')
                        .append(p.samples());
            }
            return sb.toString();
        }
    }

    record Released(long seq) implements Event {
        @Override
        public String toString() {
            return "release " + seq;
        }
    }

    record EpochDone(long epoch) implements Event {
        @Override
        public String toString() {
            return "end epoch=" + epoch;
        }
    }

    /** What the walk saw, plus the producer's batches for checking it. */
    record Result(List<Event> events, List<BatchPosition> published, StreamGeometry geometry, long finalPosition) {}

    Result run() {
        StreamGeometry g = new StreamGeometry(samplesPerEpoch, producerBatch);
        int slots = 1 << 20; // big enough that no slot is reused within a walk
        Producer producer = new Producer(g);
        for (int i = 0; i < publishedBeforeJoin; i++) {
            producer.publishOne();
        }
        if (epochEndedBeforeJoin && producer.stream.epochComplete()) {
            producer.stream.endEpoch(producer.stream.nextEpoch());
        }
        List<Event> events = new ArrayList<>();
        StartPoint start = new JoinRule(rubberBand, midEpoch).decide(producer.stream, startPolicy);
        events.add(new Start(start));
        ConsumerStream c = new ConsumerStream(g, slots, consumerBatch, dropLast, start.epoch(), start.sample(), share);
        for (long q = start.firstRetained(); q <= start.lastRetained(); q++) {
            c.accept(producer.published.get((int) q), (int) (q % slots));
        }
        int next = producer.published.size();
        for (int e = 0; e < consumerEpochs; e++) {
            if (c.epochStarted()) {
                while (!c.skipArrived(c.epochEnd()) && !c.streamEnded()) {
                    releases(c, events);
                    next = feed(producer, c, next, slots, start);
                }
                releases(c, events);
            }
            c.beginEpoch();
            int taken = 0;
            while (leaveAfter == 0 || taken < leaveAfter) {
                int n = c.nextBatch();
                if (n == ConsumerStream.NEED_MORE) {
                    next = feed(producer, c, next, slots, start);
                    continue;
                }
                releases(c, events);
                if (n == 0) {
                    break;
                }
                ConsumerStream.BatchPlan plan = c.take(n);
                events.add(new Taken(plan));
                taken++;
                releases(c, events);
                if (plan.single()) {
                    c.unpin(plan.pieces().getFirst().seq());
                }
                releases(c, events);
            }
            events.add(new EpochDone(c.epoch()));
            if (c.streamEnded() && c.position() >= c.receivedUpTo()) {
                break;
            }
        }
        return new Result(events, List.copyOf(producer.published), g, c.position());
    }

    /** Hands the consumer the next batch, publishing it first if needed; ends the stream when the producer is done. */
    private int feed(Producer producer, ConsumerStream c, int next, int slots, StartPoint start) {
        if (next == producer.published.size()) {
            if (producerEpochs > 0 && producer.epochsDone() >= producerEpochs) {
                c.endOfStream();
                return next;
            }
            producer.publishOne();
        }
        BatchPosition p = producer.published.get(next);
        if (start.sends(
                p, new StreamGeometry(samplesPerEpoch, producerBatch))) { // nothing before a waiting consumer's start
            c.accept(p, (int) (p.seq() % slots));
        }
        return next + 1;
    }

    private static void releases(ConsumerStream c, List<Event> events) {
        for (long q = c.pollReleasable(); q >= 0; q = c.pollReleasable()) {
            events.add(new Released(q));
        }
    }

    /** A producer with a source of fixed-size batches and a short last batch. */
    private final class Producer {
        final ProducerStream stream;
        final List<BatchPosition> published = new ArrayList<>();

        Producer(StreamGeometry g) {
            this.stream = new ProducerStream(g);
        }

        void publishOne() {
            if (stream.epochComplete()) {
                stream.endEpoch(stream.nextEpoch());
            }
            int samples = (int) Math.min(producerBatch, samplesPerEpoch - stream.nextSample());
            published.add(stream.publish(published.size(), samples));
        }

        long epochsDone() {
            return stream.nextEpoch() + (stream.epochComplete() ? 1 : 0);
        }
    }
}
