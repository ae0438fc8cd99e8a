package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Java consumer's checkpoint: one that takes {@link TensorConsumer#state()} mid-epoch and goes, and a new one given it
 * by {@link TensorConsumer#resume}, together read that epoch once, whether the producer ran on or was restarted with the
 * same source; the new one then reads whole epochs. A state of another consumer, or of another seed, is refused naming
 * the difference.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ResumeTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=300,shape=4,dtype=float32,seed=27");

    @TempDir
    Path tmp;

    private static TensorProducer producer(Path dir) {
        return TensorProducer.builder()
                .directory(dir)
                .source(new SyntheticSource(SPEC, 10))
                .epochs(0)
                .slots(16)
                .startGrace(Duration.ZERO)
                .build();
    }

    private static List<Long> ids(Batch b) {
        List<Long> ids = new ArrayList<>();
        Tensor id = b.tensor(SyntheticSource.ID);
        for (int i = 0; i < b.size(); i++) {
            ids.add(id.getLong(i));
        }
        return ids;
    }

    /** Reads one epoch and the first {@code batches} of the next; the ids of that part and the state after it. */
    private static ConsumerState readAndCheckpoint(TensorConsumer c, List<Long> before, int batches) {
        for (Batch b : c) {
            b.close();
        }
        int n = 0;
        for (Batch b : c) {
            before.addAll(ids(b));
            if (++n == batches) {
                return c.state(); // taken while the batch is held: it describes the next batch
            }
        }
        throw new AssertionError("the epoch ended first");
    }

    private static void assertOnce(List<Long> before, List<Long> rest) {
        List<Long> all = new ArrayList<>(before);
        all.addAll(rest);
        all.sort(null);
        assertEquals(LongStream.range(0, SPEC.samples()).boxed().toList(), all);
    }

    private static List<Long> epoch(TensorConsumer c) {
        List<Long> ids = new ArrayList<>();
        for (Batch b : c) {
            ids.addAll(ids(b));
        }
        return ids;
    }

    @Test
    void aConsumerResumedFromAStateReadsTheRestOfItsEpochOnceThenWholeEpochs() throws Exception {
        Path dir = tmp.resolve("ranon");
        try (TensorProducer p = producer(dir)) {
            TensorConsumer first = TensorConsumer.connect(dir, ConsumerOptions.batchSize(16));
            p.start();
            List<Long> before = new ArrayList<>();
            ConsumerState state = readAndCheckpoint(first, before, 5);
            assertEquals(80, state.handed());
            first.close();
            try (TensorConsumer again = TensorConsumer.connect(dir, ConsumerOptions.batchSize(16))) {
                again.resume(state);
                ProducerStatus.Consumer resuming = p.status().consumers().stream()
                        .filter(ProducerStatus.Consumer::resuming)
                        .findFirst()
                        .orElseThrow();
                assertEquals(state.epochBase() + SPEC.samples(), resuming.streamEnd(), "status: where it ends");
                assertEquals(SPEC.samples() - 80, resuming.samplesLeft(), "status: what is left of its epoch");
                assertOnce(before, epoch(again));
                List<Long> next = epoch(again);
                next.sort(null);
                assertEquals(SPEC.samples(), next.stream().distinct().count(), "the next epoch is whole");
            }
        }
    }

    @Test
    void aConsumerResumesFromAProducerRestartedWithTheSameSource() throws Exception {
        Path dir = tmp.resolve("restarted");
        List<Long> before = new ArrayList<>();
        ConsumerState state;
        try (TensorProducer p = producer(dir)) {
            TensorConsumer first = TensorConsumer.connect(dir, ConsumerOptions.batchSize(7));
            p.start();
            state = readAndCheckpoint(first, before, 11);
            first.close();
        }
        try (TensorProducer p = producer(dir);
                TensorConsumer again = TensorConsumer.connect(dir, ConsumerOptions.batchSize(7))) {
            p.start();
            again.resume(state);
            assertOnce(before, epoch(again));
        }
    }

    @Test
    void aStateOfAnotherConsumerIsRefusedNamingTheDifference() throws Exception {
        Path dir = tmp.resolve("other");
        try (TensorProducer p = producer(dir)) {
            TensorConsumer first = TensorConsumer.connect(dir, ConsumerOptions.batchSize(16));
            p.start();
            ConsumerState state = readAndCheckpoint(first, new ArrayList<>(), 2);
            first.close();
            try (TensorConsumer other = TensorConsumer.connect(dir, ConsumerOptions.batchSize(32))) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> other.resume(state));
                assertTrue(e.getMessage().contains("batch size 16 (this consumer: 32)"), e.getMessage());
            }
            ConsumerState reseeded = new ConsumerState(
                    state.producer(),
                    state.samplesPerEpoch(),
                    state.epochBase(),
                    state.handed(),
                    state.batchSize(),
                    state.dropLast(),
                    state.job(),
                    state.rank(),
                    state.worldSize(),
                    state.orderKey() + 1,
                    state.datasetSize(),
                    state.shuffle(),
                    state.draws());
            try (TensorConsumer same = TensorConsumer.connect(dir, ConsumerOptions.batchSize(16))) {
                RequestRejectedException e = assertThrows(RequestRejectedException.class, () -> same.resume(reseeded));
                assertTrue(e.getMessage().contains("orders of another seed"), e.getMessage());
            }
        }
    }
}
