package io.tensorsocket.producer;

import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * The producer thread's wait for the slot it claims next: until enough consumers are attached (the first batch waits
 * for {@code minConsumers}, later ones for one, except in a relay, which reads on for no one) and every consumer that
 * was sent the slot's batch released it. A consumer that holds the slot past the stall timeout is evicted. The time
 * waited on holders is {@link PaceWatch}'s to judge; the consumers' readers learn from {@link #awaitingRelease} whether
 * a release is wanted at once.
 *
 * <p>Called with the core's lock held; the waits release it.
 */
final class SlotWait {
    private final ServingRules rules;
    private final ServingState state;
    private final SlotTable slots;
    private final Attached consumers;
    private final StartWaits waits;
    private final PaceWatch pace;
    private final Lanes lanes;
    private final Runnable checkOpen;

    private volatile boolean awaitingRelease;
    private volatile Runnable releaseWanted = () -> {};
    private volatile Runnable paused = () -> {};

    SlotWait(
            ServingRules rules,
            ServingState state,
            SlotTable slots,
            Attached consumers,
            StartWaits waits,
            PaceWatch pace,
            Lanes lanes,
            Runnable checkOpen) {
        this.rules = rules;
        this.state = state;
        this.slots = slots;
        this.consumers = consumers;
        this.waits = waits;
        this.pace = pace;
        this.lanes = lanes;
        this.checkOpen = checkOpen;
    }

    /**
     * Waits until {@code slot} is free and consumers are attached, evicting whoever stalls it too long.
     *
     * @param nothingClaimed whether no claim is outstanding (then the first batch waits for {@code minConsumers})
     */
    void awaitFree(int slot, BooleanSupplier nothingClaimed) {
        long stalledSince = System.nanoTime();
        while (true) {
            checkOpen.run();
            int needed = state.totalPublished == 0 && nothingClaimed.getAsBoolean() ? rules.minConsumers() : 1;
            boolean readsOn = rules.readsWhenIdle() && state.totalPublished > 0;
            if (readsOn) {
                waits.noteAttached(consumers.count());
            } else if (consumers.count() < needed) {
                if (state.totalPublished > 0) {
                    paused.run(); // consumers came, read and left: the source may stop loading until one comes
                }
                waits.awaitConsumers(needed, state.totalPublished > 0);
                stalledSince = System.nanoTime();
                continue;
            }
            if (!readsOn && state.totalPublished > 0 && consumers.onMainStream() == 0) {
                waits.awaitNanos(
                        1_000_000_000L); // every consumer reads from a lane: the main stream waits for a new one
                stalledSince = System.nanoTime();
                continue;
            }
            if (slots.isFree(slot)) {
                awaitingRelease = false;
                pace.tick(System.nanoTime(), consumers.onMainStream());
                return;
            }
            long left = rules.stallTimeout().toNanos() - (System.nanoTime() - stalledSince);
            if (left <= 0) {
                consumers.evictHoldersOf(slots.seqIn(slot), rules.producerName(), rules.stallTimeout());
                stalledSince = System.nanoTime();
                continue;
            }
            awaitingRelease = true;
            releaseWanted.run();
            List<ConsumerSession> holders =
                    pace.watches(consumers.onMainStream()) ? consumers.holdersOf(slots.seqIn(slot)) : List.of();
            long before = System.nanoTime();
            waits.awaitNanos(Math.min(left, lanes.judgeEvery())); // a stalled holder is judged too, not only a slow one
            long after = System.nanoTime();
            pace.waited(holders, after - before, consumers.onMainStream());
            lanes.waited(holders, after - before, after);
            pace.tick(after, consumers.onMainStream());
        }
    }

    /**
     * Whether the producer waits for a slot that consumers still hold: only then is a release wanted at once;
     * otherwise the {@link ConsumerReader} lets releases gather and reads them in fewer wake-ups.
     */
    boolean awaitingRelease() {
        return awaitingRelease;
    }

    /** Sets what tells the source that the producer pauses, its consumers gone ({@code BatchSource.paused}). */
    void onPaused(Runnable r) {
        this.paused = r;
    }

    /** Sets what tells the reader that the producer started waiting for a release. */
    void onReleaseWanted(Runnable r) {
        this.releaseWanted = r;
    }
}
