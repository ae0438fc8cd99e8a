package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.spi.RelayBoundaries;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A producer keeps boundaries on behalf of a consumer that relays its stream ({@link UpstreamBoundaries}): a kept
 * offset cuts its next epochs as a consumer joining there would, until released; it is refused as too late once the
 * next epoch's order is drawn, and unavailable where the producer does not choose its order.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BoundaryForRelayTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=997,shape=4,dtype=float32,seed=29");
    private static final int BATCH = 16;
    private static final int OFFSET = 320;

    @TempDir
    Path tmp;

    @Test
    void aKeptBoundaryCutsTheNextEpochsUntilReleasedAndComesTooLateOnceTheirOrderIsDrawn() throws Exception {
        Path dir = tmp.resolve("p");
        // 4 slots: the producer runs at most a few batches ahead of its one consumer, so the consumer's position
        // says which epoch's order is drawn
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir)
                        .source(new SyntheticSource(SPEC, BATCH))
                        .epochs(0)
                        .slots(4)
                        .rubberBand(0)
                        .startGrace(Duration.ZERO)
                        .build();
                TensorConsumer relay = TensorConsumer.connect(dir, ConsumerOptions.batchSize(BATCH))) {
            p.start();
            int id = relay.consumerId();
            long[][] ids = new long[5][(int) SPEC.samples()];
            for (int e = 0; e < 5; e++) {
                for (Batch b : relay) {
                    Tensor t = b.tensor(SyntheticSource.ID);
                    for (int i = 0; i < b.size(); i++) {
                        ids[e][(int) b.sampleStart() + i] = t.getLong(i);
                    }
                    if (e == 0 && b.sampleStart() == 160) {
                        assertEquals(UpstreamBoundaries.Answer.KEPT, RelayBoundaries.keep(p, id, 0, OFFSET));
                        assertEquals(
                                UpstreamBoundaries.Answer.UNAVAILABLE,
                                RelayBoundaries.keep(p, id, 0, 0),
                                "an epoch start needs no boundary");
                        assertEquals(
                                UpstreamBoundaries.Answer.UNAVAILABLE, RelayBoundaries.keep(p, id, 0, SPEC.samples()));
                        assertEquals(
                                UpstreamBoundaries.Answer.UNAVAILABLE,
                                RelayBoundaries.keep(p, id + 100, 0, OFFSET),
                                "no such consumer");
                    }
                    if (e == 1 && b.sampleStart() == 160) {
                        assertEquals(
                                UpstreamBoundaries.Answer.TOO_LATE,
                                RelayBoundaries.keep(p, id, 0, 500),
                                "epoch 1's order is drawn: a boundary in epoch 0 comes too late");
                    }
                    if (e == 2 && b.sampleStart() == 160) {
                        RelayBoundaries.release(p, id, OFFSET);
                    }
                    b.close();
                }
            }
            for (int e = 1; e <= 2; e++) {
                assertEquals(head(ids[0]), head(ids[e]), "epoch " + e + " keeps the chunk before the kept boundary");
                Set<Long> window = new HashSet<>();
                for (int i = OFFSET; i < ids[e - 1].length; i++) {
                    window.add(ids[e - 1][i]);
                }
                for (int i = 0; i < OFFSET; i++) {
                    window.add(ids[e][i]);
                }
                assertEquals(
                        SPEC.samples(), window.size(), "a relay joiner's epoch from sample " + OFFSET + " is one pass");
            }
            assertFalse(Arrays.equals(ids[0], ids[1]), "within the chunks, samples are shuffled again");
            assertNotEquals(head(ids[2]), head(ids[4]), "released: later epochs are fresh shuffles of everything");
        }
    }

    @Test
    void aProducerThatDoesNotChooseItsOrderCannotKeepBoundaries() throws Exception {
        Path dir = tmp.resolve("q");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir)
                        .source(SyntheticSource.seeded(SPEC, BATCH, Duration.ZERO))
                        .epochs(0)
                        .startGrace(Duration.ZERO)
                        .build();
                TensorConsumer relay = TensorConsumer.connect(dir, ConsumerOptions.batchSize(BATCH))) {
            p.start();
            try (Batch b = relay.iterator().next()) {
                assertEquals(
                        UpstreamBoundaries.Answer.UNAVAILABLE,
                        RelayBoundaries.keep(p, relay.consumerId(), b.epoch(), OFFSET));
            }
        }
    }

    private static Set<Long> head(long[] epoch) {
        Set<Long> s = new HashSet<>();
        for (int i = 0; i < OFFSET; i++) {
            s.add(epoch[i]);
        }
        return s;
    }
}
