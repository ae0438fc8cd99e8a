package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Consumers in their own JVMs (and a Python one) joining a running producer at random moments, each with its own
 * batch size, one of them SIGKILLed on the way: every epoch of every consumer is one pass over the data set, those
 * that joined mid-epoch say {@code "start": "exact"}, and all saw the same sample at every stream position they
 * share.
 */
class ExactEpochsProcessTest extends ProcessTestBase {

    @Test
    void consumersJoiningAtRandomTimesWithTheirOwnBatchSizesAllGetExactEpochsOfOneStream() throws Exception {
        long seed = System.nanoTime();
        SplittableRandom r = new SplittableRandom(seed);
        // 100 batches of at least 4 ms per epoch, a 2-batch rubber band: nearly every join is mid-epoch. The anchor
        // reads until the end, so the stream never rests at an epoch start for want of consumers (on a loaded
        // machine the next JVM may take longer to start than a short reader takes to finish).
        Proc producer = serve(
                "exact",
                "samples=2000,shape=4,dtype=float32,seed=5",
                20,
                0,
                "--loader-delay-ms",
                "4",
                "--rubber-band",
                "2");
        Proc anchor = consume("exact", 20);
        awaitJoined(producer, 1);
        List<Proc> readers = new ArrayList<>();
        List<Path> idFiles = new ArrayList<>();
        readers.add(javaReader(20, 3, idFiles));
        for (int b : new int[] {7, 64, 33}) {
            Thread.sleep(r.nextInt(100, 700));
            readers.add(javaReader(b, 2, idFiles));
        }
        Thread.sleep(r.nextInt(100, 400));
        Proc victim = consume("exact", 16, "--epochs", "5");
        if (pythonAvailable()) {
            readers.add(pythonConsume("exact", 50, "--epochs", "2"));
        }
        awaitJoined(producer, readers.size() + 2);
        Thread.sleep(300);
        victim.kill();
        readers.add(javaReader(25, 2, idFiles));

        int exactStarts = 0;
        for (Proc c : readers) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(90)), "seed " + seed + ": " + c.stderr());
            assertTrue(c.json().size() >= 2, c.json().toString());
            for (Map<String, String> e : c.json()) {
                String start = e.get("start");
                assertTrue(start.equals("epoch_start") || start.equals("exact"), e.toString());
                assertExactEpoch(e, 2000, start);
                assertEquals("producer", e.get("order"), e.toString());
            }
            exactStarts += c.json().getFirst().get("start").equals("exact") ? 1 : 0;
        }
        anchor.kill();
        assertTrue(exactStarts >= 2, "seed " + seed + ": only " + exactStarts + " consumers joined mid-epoch");

        assertOneStream(idFiles, seed);
        assertTrue(producer.stderr().contains("joined at exact"), producer.stderr());
    }

    @Test
    void aTorchDataLoaderOverAMapStyleDatasetIsFedByIndexAndLateJoinersGetExactEpochs() throws Exception {
        assumePython("numpy", "torch");
        long seed = System.nanoTime();
        SplittableRandom r = new SplittableRandom(seed);
        // A plain DataLoader(dataset, shuffle=True, num_workers=2): the feeder loads the producer's order with it.
        // Six slots: a paused consumer holds the stream within 300 samples of where it stopped.
        Proc feeder = startPython(
                Map.of("OMP_NUM_THREADS", "1"),
                pythonClient().resolve("tests/scripts/feed_case.py").toString(),
                "torchmap",
                "mapstyle",
                "--workers",
                "2",
                "--epochs",
                "20",
                "--sample-ms",
                "0.3",
                "--opt",
                "rubber_band=0",
                "--opt",
                "start_grace=0",
                "--opt",
                "slots=6");
        List<Path> idFiles = new ArrayList<>();
        List<Proc> readers = new ArrayList<>();
        Proc first = reader("torchmap", 32, idFiles, "--progress-ms", "20");
        readers.add(first);
        // One joiner is certain to arrive mid-epoch: the first reader is paused between samples 200 and 450 of an
        // epoch, so the producer stops within six batches of it, and resumes once the joiner is in. Between
        // epochs the DataLoader restarts its workers; a joiner arriving then starts at the epoch start, which
        // the randomly timed joiners below may do.
        first.awaitLine(l -> l.contains("\"progress\"") && inRange(l, 200, 450), Duration.ofSeconds(90));
        first.signal("STOP");
        Proc midEpoch = reader("torchmap", 45, idFiles);
        readers.add(midEpoch);
        awaitJoined(feeder, 2);
        first.signal("CONT");
        Thread.sleep(r.nextInt(300, 1200));
        readers.add(reader("torchmap", 20, idFiles));
        Thread.sleep(r.nextInt(100, 500));
        readers.add(pythonConsume("torchmap", 17));
        for (Proc c : readers) {
            assertEquals(0, c.exitCode(Duration.ofMinutes(2)), "seed " + seed + ": " + c.stderr());
            List<Map<String, String>> epochs =
                    c.json().stream().filter(e -> e.containsKey("epoch")).toList();
            assertTrue(epochs.size() >= 2, "seed " + seed + ": " + epochs);
            for (Map<String, String> e : epochs) {
                if ("true".equals(e.get("complete"))) {
                    assertExactEpoch(e, 1000);
                }
                assertEquals("producer", e.get("order"), e.toString());
            }
            if (c == midEpoch) {
                assertEquals(
                        "exact",
                        epochs.getFirst().get("start"),
                        "joined while the stream was mid-epoch: " + feeder.stderr());
            }
        }
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(60)), feeder.stderr());
        assertOneStream(idFiles, seed);
    }

    /** Whether a progress line's sample count falls between {@code from} and {@code to} of a 1000-sample epoch. */
    private static boolean inRange(String progressLine, int from, int to) {
        long inEpoch = Long.parseLong(JsonLine.parse(progressLine).get("samples")) % 1000;
        return inEpoch >= from && inEpoch <= to;
    }

    /** Every stream position that several consumers saw held the same sample for all of them. */
    private static void assertOneStream(List<Path> idFiles, long seed) throws IOException {
        Map<Long, Long> stream = new HashMap<>();
        for (Path f : idFiles) {
            for (String line : Files.readAllLines(f)) {
                String[] v = line.split(" ");
                long pos = Long.parseLong(v[0]);
                for (int i = 1; i < v.length; i++) {
                    Long id = Long.valueOf(v[i]);
                    Long other = stream.putIfAbsent(pos + i - 1, id);
                    assertTrue(
                            other == null || other.equals(id),
                            "seed " + seed + ": consumers saw different samples at stream position " + (pos + i - 1));
                }
            }
        }
    }

    private Proc reader(String name, int batchSize, List<Path> idFiles, String... extra) throws Exception {
        Path ids = base.resolve(name + "-ids-" + idFiles.size());
        idFiles.add(ids);
        List<String> args = new ArrayList<>(List.of("--ids-out", ids.toString()));
        args.addAll(List.of(extra));
        return consume(name, batchSize, args.toArray(String[]::new));
    }

    private Proc javaReader(int batchSize, int epochs, List<Path> idFiles) throws Exception {
        return reader("exact", batchSize, idFiles, "--epochs", Integer.toString(epochs));
    }
}
