package io.tensorsocket.spi;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.Batch;
import io.tensorsocket.DType;
import io.tensorsocket.StartMode;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorSpec;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The façade another module puts over its own engine: every call reaches the engine, the façade's metering
 * holds, and closing the façade closes the engine and refuses later calls with the engine's address.
 */
class ConsumerFacadeTest {

    /** An engine of two epochs of three one-sample batches, recording what the façade asked of it. */
    static final class TwoEpochs implements ConsumerEngine {
        long epoch;
        boolean closed;

        @Override
        public StreamTerms terms() {
            return new StreamTerms(
                    3,
                    3,
                    1,
                    1,
                    StartMode.EPOCH_START,
                    StartMode.ROLLING,
                    0,
                    0,
                    -1,
                    null,
                    List.of(TensorSpec.of("v", DType.INT64)),
                    "two epochs",
                    2,
                    "test");
        }

        @Override
        public long epoch() {
            return epoch;
        }

        @Override
        public long streamPosition(Batch b) {
            return b.epoch() * 3 + b.sampleStart();
        }

        @Override
        public boolean isEndOfStream() {
            return epoch == 2;
        }

        @Override
        public Iterator<Batch> iterator() {
            long e = epoch++;
            return List.of(0, 1, 2).stream()
                    .map(i -> Batch.of("v", Tensor.ofLongs(new long[] {e * 3 + i}, 1)))
                    .iterator();
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    @Test
    void theFacadeHandsEveryCallToTheEngineAndClosesIt() {
        TwoEpochs engine = new TwoEpochs();
        TensorConsumer c = ConsumerFacade.over("test://x", engine);
        assertEquals("test", c.handoff());
        assertFalse(c.ringHandoff());
        assertEquals("two epochs", c.sourceDescription());
        long sum = 0;
        for (int e = 0; e < 2; e++) {
            for (Batch b : c) {
                sum += b.tensor("v").getLong(0);
            }
        }
        assertEquals(0 + 1 + 2 + 3 + 4 + 5, sum);
        assertEquals(6, c.samplesConsumed());
        assertTrue(c.isEndOfStream());
        c.close();
        assertTrue(engine.closed);
        IllegalStateException e = assertThrows(IllegalStateException.class, c::iterator);
        assertTrue(e.getMessage().contains("test://x"), e.getMessage());
    }
}
