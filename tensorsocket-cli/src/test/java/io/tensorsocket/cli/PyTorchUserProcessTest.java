package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A PyTorch user's first hour, as they launch things: a torch {@code DataLoader} fed through the Python
 * {@code TensorProducer} (which starts its own producer) and trainers launched in the same second. Every run checks
 * what is left: no producer process, no directory. {@link PyTorchFeederEndsProcessTest} has the feeders' ends,
 * failures and refusals, {@link SweepBenchProcessTest} the sweep benchmark the README shows.
 */
@Timeout(240)
class PyTorchUserProcessTest extends PyTorchFeederTestBase {

    @Test
    void aFeederAndThreeTrainersLaunchedInTheSameSecondAllGetExactEpochsThreeTimesInARow() throws Exception {
        assumePython("numpy", "torch");
        for (int run = 0; run < 3; run++) {
            String name = "sweep" + run;
            // As a sweep script starts them: no order, no waiting; the feeder starts the producer itself.
            Proc feeder = feedCase(name, "ok", "--workers", "2", "--epochs", "1");
            List<Proc> trainers = List.of(pythonConsume(name, 32), consume(name, 64), pythonConsume(name, 100));
            for (Proc t : trainers) {
                assertEquals(0, t.exitCode(Duration.ofSeconds(90)), "run " + run + ": " + t.stderr());
                List<Map<String, String>> epochs = t.json();
                assertEquals(1, epochs.size(), "run " + run + ": " + t.lines());
                for (Map<String, String> e : epochs) {
                    // at the epoch start, or exact mid-epoch: the feeder's map-style data set is fed by index
                    assertExactEpoch(e, 1000);
                }
            }
            assertEquals(0, feeder.exitCode(Duration.ofSeconds(30)), feeder.stderr());
            assertNothingLeft(name, 30);
        }
    }
}
