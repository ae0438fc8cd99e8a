package io.tensorsocket.external;

import io.tensorsocket.SlotWriter;
import io.tensorsocket.protocol.Message;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One epoch of a feeder's frames, each checked against its declaration as it comes: claims within the claims ahead
 * it may hold, publishes of slots it holds of 1 to its batch size samples, only the epoch's last batch short, no
 * more samples than declared, an epoch end after exactly the declared samples with no slot held, and an order asked
 * for once, before the first claim, only by a feeder that loads by index. A frame that breaks a rule fails the
 * stream ({@link Link#fail}) with a message that says what the feeder did; see {@link ExternalSource} for the
 * protocol and for what a failure means.
 */
final class FeederEpoch {

    /** The end of the feeder's connection, as its reader saw it. */
    record Ended(Throwable cause) {}

    /** What checking an epoch needs of the feeder's connection and of the producer. */
    interface Link {
        /** Claims a producer slot for the feeder, which may wait long (see {@link ExternalSource}). */
        SlotWriter claim(String at);

        void send(Message m, String at);

        /** Epoch {@code epoch}'s order, sent as the feeder asked. */
        void sendOrder(long epoch, int[] order);

        /** Tells the feeder why the stream ends; the failure to throw. */
        FeederFailedException fail(String message);

        /** What the feeder's own ERROR means: it stopped, or it failed. */
        RuntimeException ended(Message.Error e, String at);
    }

    private final long epoch;
    private final int[] order;
    private final String who;
    private final long declared;
    private final String promise;
    private final int batchSize;
    private final int claimsAhead;
    private final Link link;
    private final Map<Long, SlotWriter> held = new LinkedHashMap<>();
    private long nextSeq;
    private long samples;
    private int shortBatch;

    /**
     * @param order     the epoch's order, for a feeder that loads by index and asks for it; null for one that keeps
     *                  its own, or that was sent it unasked (a lane's)
     * @param declared  the samples the epoch holds: the declared samples per epoch, or the part of an epoch a lane loads
     * @param promise   why those, for messages after "the N": "per epoch it declared", "of its order lane K sent"
     * @param who       the feeder, as messages name it
     * @param firstSeq  the number of the epoch's first claim
     */
    FeederEpoch(
            long epoch,
            int[] order,
            long declared,
            String promise,
            Message.FeederHello hello,
            String who,
            int claimsAhead,
            long firstSeq,
            Link link) {
        this.epoch = epoch;
        this.order = order;
        this.who = who;
        this.declared = declared;
        this.promise = promise;
        this.batchSize = hello.batchSize();
        this.claimsAhead = claimsAhead;
        this.nextSeq = firstSeq;
        this.link = link;
    }

    /** Where in its epoch the feeder is, as messages say it. */
    String at() {
        return " in epoch " + epoch + " after " + samples + " of its " + declared + " samples";
    }

    /** The number of the next claim, the following epoch's first once this one ended. */
    long nextSeq() {
        return nextSeq;
    }

    /**
     * Takes what the feeder's reader delivered next: a frame, or its connection's {@link Ended end}.
     *
     * @return true once the epoch ended as declared (its end was acknowledged to the feeder)
     * @throws RuntimeException the stream's failure or stop, as {@link Link#fail} and {@link Link#ended} make it
     */
    boolean take(Object o) {
        String at = at();
        switch (o) {
            case Ended e ->
                throw link.fail(who + " disconnected" + at
                        + (e.cause() != null ? " (" + e.cause().getMessage() + ")" : "") + "; did its process die?");
            case Message.Claim c -> claim(at);
            case Message.Publish p -> publish(p, at);
            case Message.FeederEpochEnd e -> {
                end(e, at);
                return true;
            }
            case Message.OrderRequest r -> {
                if (order == null || r.epoch() != epoch || samples > 0 || !held.isEmpty()) {
                    throw link.fail(who + " asked for the order of epoch " + r.epoch() + at
                            + (order == null
                                    ? ", but it declared no data set to load by index"
                                    : "; it may ask once, before its first claim"));
                }
                link.sendOrder(epoch, order);
            }
            case Message.Error e -> throw link.ended(e, at);
            case Message m ->
                throw link.fail(who + " sent " + m.getClass().getSimpleName() + at + ", which a feeder never sends");
            default -> throw new IllegalStateException("unexpected " + o);
        }
        return false;
    }

    private void claim(String at) {
        if (shortBatch > 0) {
            throw link.fail(who + " claimed a slot after a short batch of " + shortBatch + " samples" + at
                    + "; only an epoch's last batch may hold fewer than " + batchSize);
        }
        if (held.size() >= claimsAhead) {
            throw link.fail(
                    who + " claimed " + (held.size() + 1) + " slots without publishing; it may hold " + claimsAhead);
        }
        SlotWriter w = link.claim(at);
        long seq = nextSeq++;
        held.put(seq, w);
        link.send(new Message.SlotGrant(seq, w.arenaOffset()), at);
    }

    private void publish(Message.Publish p, String at) {
        SlotWriter w = held.remove(p.seq());
        if (w == null) {
            throw link.fail(who + " published batch " + p.seq() + ", a slot it does not hold (it holds " + held.keySet()
                    + ")" + at);
        }
        if (p.samples() < 1 || p.samples() > batchSize) {
            throw link.fail(who + " published " + p.samples() + " samples in one batch" + at + "; a batch holds 1 to "
                    + batchSize + " (its declared batch size)");
        }
        if (shortBatch > 0) {
            throw link.fail(who + " published a batch after a short batch of " + shortBatch + " samples" + at
                    + "; only an epoch's last batch may hold fewer than " + batchSize);
        }
        if (samples + p.samples() > declared) {
            throw link.fail(who + " published " + (samples + p.samples()) + " samples in epoch " + epoch + ", more than"
                    + " the " + declared + " " + promise);
        }
        samples += p.samples();
        if (p.samples() < batchSize) {
            shortBatch = p.samples();
        }
        w.publish(p.samples());
    }

    private void end(Message.FeederEpochEnd e, String at) {
        if (e.epoch() != epoch) {
            throw link.fail(who + " ended epoch " + e.epoch() + " while the producer is in epoch " + epoch);
        }
        // a feeder claims ahead for the samples it declared: one whose loader ran short holds claims
        if (samples != declared || e.samples() != samples) {
            throw link.fail(who + " ended epoch " + epoch + " after " + Math.max(samples, e.samples())
                    + " samples, not the " + declared + " " + promise);
        }
        if (!held.isEmpty()) {
            throw link.fail(who + " ended epoch " + epoch + " holding unpublished slots " + held.keySet());
        }
        link.send(e, at); // the feeder learns that its epoch was taken before it goes on or stops
    }
}
