package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Several consumer JVMs, each at its own batch size, receive every sample exactly once over two epochs. */
class ExactlyOnceProcessTest extends ProcessTestBase {

    @Test
    void batchSizesThatEqualDivideDoNotDivideAndExceedTheProducers() throws Exception {
        String spec = "samples=1003,shape=3x8x8,dtype=float32,seed=11";
        serve("mix", spec, 16, 2, "--min-consumers", "5");
        int[] sizes = {16, 8, 10, 40, 1};
        String[] handoffs = {"ring", "socket", "ring", "socket", "ring"}; // both paths serve one producer at once
        List<Proc> consumers = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            consumers.add(consume("mix", sizes[i], "--handoff", handoffs[i]));
        }
        for (int i = 0; i < sizes.length; i++) {
            Proc c = consumers.get(i);
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            List<Map<String, String>> epochs = c.json();
            assertEquals(2, epochs.size(), "batch size " + sizes[i] + ": " + epochs);
            for (int e = 0; e < 2; e++) {
                assertExactEpoch(epochs.get(e), 1003, "epoch_start");
                assertEquals(Integer.toString(e), epochs.get(e).get("epoch"));
                assertEquals(handoffs[i], epochs.get(e).get("handoff"));
                assertEquals(
                        Long.toString((1003 + sizes[i] - 1) / sizes[i]),
                        epochs.get(e).get("batches"));
            }
        }
    }

    @Test
    void dropLastDropsOnlyTheShortTail() throws Exception {
        serve("drop", "samples=500,shape=16,dtype=int32,seed=3", 32, 2, "--min-consumers", "2");
        Proc dropping = consume("drop", 48, "--drop-last");
        Proc keeping = consume("drop", 48);
        assertEquals(0, dropping.exitCode(Duration.ofSeconds(60)), dropping.stderr());
        assertEquals(0, keeping.exitCode(Duration.ofSeconds(60)), keeping.stderr());
        for (Map<String, String> e : dropping.json()) {
            assertEquals("480", e.get("samples"), e.toString());
            assertEquals("480", e.get("unique"), e.toString());
            assertEquals("10", e.get("batches"), e.toString());
            assertEquals("0", e.get("corrupt"));
            assertEquals("0", e.get("out_of_order"));
        }
        for (Map<String, String> e : keeping.json()) {
            assertExactEpoch(e, 500, "epoch_start");
            assertEquals("11", e.get("batches"));
        }
        assertEquals(2, dropping.json().size());
        assertEquals(2, keeping.json().size());
    }

    @Test
    void everyDtypeArrivesByteIdentical() throws Exception {
        String[] dtypes = {"uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float64", "bool"};
        for (String dtype : dtypes) {
            String name = "dt-" + dtype;
            serve(name, "samples=97,shape=5x3,dtype=" + dtype + ",seed=5", 10, 1);
            Proc c = consume(name, 7);
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), dtype + ": " + c.stderr());
            assertExactEpoch(c.json().getFirst(), 97, "epoch_start");
        }
        assertTrue(true);
    }
}
