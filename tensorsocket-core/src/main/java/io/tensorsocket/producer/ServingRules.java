package io.tensorsocket.producer;

import io.tensorsocket.StartMode;
import java.time.Duration;

/**
 * How a producer serves its stream.
 *
 * @param samplesPerEpoch samples in each epoch
 * @param firstEpoch      the number of the first epoch the source emits (a relay's: its upstream's)
 * @param epochs          the epoch the stream ends before, or 0 for no end
 * @param rubberBand      batches kept after publication, so late joiners still start at the epoch start
 * @param claimsAhead     slots the source may claim ahead of publishing
 * @param stallTimeout    how long the producer waits on one consumer's unreleased batch before evicting it
 * @param idleTimeout     how long it waits with no consumer attached before stopping; null: until closed
 * @param minConsumers    consumers to wait for before the first batch
 * @param startGrace      after the first consumer attached, how long to wait for others before the first batch
 * @param producerName    how logs and errors name the producer
 * @param midEpoch        how a consumer joining mid-epoch starts: {@link StartMode#EXACT} when the producer chooses
 *                        the order (an {@link io.tensorsocket.IndexedSource}), {@link StartMode#ROLLING} otherwise
 * @param jobTimeout      how long the first rank of a data-parallel job waits for the others before the job fails
 * @param readsWhenIdle   whether, once started, it publishes on with no consumer attached instead of pausing: a relay,
 *                        whose pause would hold its upstream's other readers (the idle timeout still ends it)
 */
public record ServingRules(
        long samplesPerEpoch,
        long firstEpoch,
        long epochs,
        int rubberBand,
        int claimsAhead,
        Duration stallTimeout,
        Duration idleTimeout,
        int minConsumers,
        Duration startGrace,
        String producerName,
        StartMode midEpoch,
        Duration jobTimeout,
        boolean readsWhenIdle) {}
