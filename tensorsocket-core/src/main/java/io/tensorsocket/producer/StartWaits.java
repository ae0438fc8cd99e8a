package io.tensorsocket.producer;

import io.tensorsocket.TensorSocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.locks.Condition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producer thread's waits for consumers: for enough of them to attach (up to the idle timeout, which
 * ends the producer: normally, with {@link ProducerIdleEnd}, once consumers came, read and left; with a
 * timeout saying how many came when too few ever did), and, before the very first batch, for the start
 * grace since the first one attached, so that consumers launched together all start at the first epoch's
 * start. Called under the producer's lock, whose condition {@code changed} is signalled when consumers come.
 */
final class StartWaits {
    private static final Logger log = LoggerFactory.getLogger(StartWaits.class);

    private final ServingRules rules;
    private final Attached consumers;
    private final Condition changed;
    private final Runnable checkOpen;

    /** {@code checkOpen} throws {@link ProducerStopped} once the producer is being closed. */
    StartWaits(ServingRules rules, Attached consumers, Condition changed, Runnable checkOpen) {
        this.rules = rules;
        this.consumers = consumers;
        this.changed = changed;
        this.checkOpen = checkOpen;
    }

    /** Waits until {@code needed} consumers are attached; {@code started} says whether batches were published yet. */
    void awaitConsumers(int needed, boolean started) {
        Duration idleTimeout = rules.idleTimeout();
        long deadline = idleTimeout == null ? Long.MAX_VALUE : System.nanoTime() + idleTimeout.toNanos();
        String bound = idleTimeout == null ? "until stopped" : "up to " + idleTimeout.toSeconds() + " s";
        if (!started) {
            log.info(
                    "producer '{}' waits for {} consumer(s) before it starts ({})",
                    rules.producerName(),
                    needed,
                    bound);
        } else {
            log.info("no consumer attached; producer '{}' pauses ({})", rules.producerName(), bound);
        }
        while (consumers.count() < needed) {
            checkOpen.run();
            long left = idleTimeout == null ? Long.MAX_VALUE : deadline - System.nanoTime();
            if (left <= 0) {
                if (started) {
                    throw new ProducerIdleEnd(endMessage());
                }
                throw new TensorSocketTimeoutException(idleMessage(needed));
            }
            awaitNanos(Math.min(left, 60_000_000_000L));
        }
    }

    /** Whether a producer that reads when idle has no consumer attached now, and since when. */
    private boolean idle;

    private long idleSince;

    /**
     * For a producer that publishes on with no consumer attached ({@link ServingRules#readsWhenIdle}, a relay), at each
     * slot it claims: notes how many consumers are attached, says once when none is, and ends the producer as {@link
     * #awaitConsumers} would when none came back within the idle timeout.
     */
    void noteAttached(int attached) {
        if (attached > 0) {
            idle = false;
            return;
        }
        long now = System.nanoTime();
        if (!idle) {
            idle = true;
            idleSince = now;
            log.info(
                    "no consumer attached; relay '{}' reads its upstream on for no one ({}), so as not to hold the"
                            + " upstream's other readers",
                    rules.producerName(),
                    rules.idleTimeout() == null
                            ? "until stopped"
                            : "up to " + rules.idleTimeout().toSeconds() + " s");
            return;
        }
        if (rules.idleTimeout() != null
                && now - idleSince >= rules.idleTimeout().toNanos()) {
            throw new ProducerIdleEnd(endMessage());
        }
    }

    private String endMessage() {
        return "producer '" + rules.producerName() + "' ends: its consumers left and none came back within "
                + idleTimeout() + " (the idle timeout, --idle-timeout-s)";
    }

    private String idleTimeout() {
        long ms = rules.idleTimeout().toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms";
    }

    private String idleMessage(int needed) {
        String within = " within " + idleTimeout() + " (the idle timeout, --idle-timeout-s); raise it to wait longer";
        if (needed <= 1) {
            return "producer '" + rules.producerName() + "' stopped: no consumer attached" + within;
        }
        return "producer '" + rules.producerName() + "' stopped: only " + consumers.count() + " of the " + needed
                + " consumers it waits for (--min-consumers) attached" + within;
    }

    /** Waits until the start grace has passed since {@code firstAttachNanos} (0: no consumer yet, no wait). */
    void awaitStartGrace(long firstAttachNanos) {
        if (rules.startGrace().isZero() || firstAttachNanos == 0) {
            return;
        }
        long deadline = firstAttachNanos + rules.startGrace().toNanos();
        for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
            checkOpen.run();
            awaitNanos(left);
        }
    }

    /**
     * Waits on the producer's condition for at most {@code nanos}; an interrupt stops the producer. Callers loop,
     * re-checking what they wait for.
     */
    @SuppressWarnings("WaitNotInLoop")
    void awaitNanos(long nanos) {
        try {
            changed.awaitNanos(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProducerStopped("interrupted");
        }
    }
}
