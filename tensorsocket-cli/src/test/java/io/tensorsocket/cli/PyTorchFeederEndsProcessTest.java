package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a PyTorch user's feeder ends, fails and is refused, as they launch things: consumers that come before their
 * producer or wait for one in vain, loaders that raise (also on their first batch), a feeder killed or interrupted
 * (Ctrl-C), a second feeder of a name, a producer waiting for its feeder, and the reference implementation's API.
 * Every run checks what is left: no producer process, no directory.
 */
@Timeout(240)
class PyTorchFeederEndsProcessTest extends PyTorchFeederTestBase {

    @Test
    void consumersThatComeBeforeTheirProducerWaitForItAndSaySoOnce() throws Exception {
        int port = freePort();
        List<Proc> early = new ArrayList<>(List.of(consume("late", 25), consume(uri(port, "late"), 40)));
        boolean python = pythonAvailable();
        if (python) {
            early.add(pythonConsume("late", 30));
        }
        for (Proc c : early) { // the notice comes after 3 s of waiting (later after a slow start on a loaded machine)
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!(c.stderr().contains("waiting for producer 'late' to appear")
                            || c.stderr().contains("waiting for server grpc://"))
                    && System.nanoTime() < deadline) {
                assertTrue(c.isAlive(), c.stderr());
                Thread.sleep(50);
            }
            assertTrue(c.isAlive(), c.stderr());
        }
        serve(
                "late",
                "samples=600,shape=8,dtype=float32,seed=2",
                20,
                1,
                "--flight",
                "127.0.0.1:" + port,
                "--min-consumers",
                Integer.toString(early.size())); // the remote one is its server's local consumer
        for (Proc c : early) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            assertExactEpoch(c.json().getFirst(), 600, "epoch_start");
            long notices =
                    c.stderr().lines().filter(l -> l.contains("to appear")).count();
            assertEquals(1, notices, c.stderr());
        }
    }

    @Test
    void aConsumerThatWaitsInVainSaysWhatItWaitedFor() throws Exception {
        Proc java = consume("nobody-here", 8, "--connect-timeout-s", "2");
        Proc remote = consume(uri(freePort(), "nobody-here"), 8, "--connect-timeout-s", "2");
        assertEquals(1, java.exitCode(Duration.ofSeconds(30)));
        assertTrue(java.errorLine().contains("no producer named 'nobody-here' appeared within 2 s"), java.errorLine());
        assertTrue(java.errorLine().contains("TensorProducer(\"nobody-here\", loader)"), java.errorLine());
        assertEquals(1, remote.exitCode(Duration.ofSeconds(30)));
        assertTrue(remote.errorLine().contains("did not answer within 2 s"), remote.errorLine());
        if (pythonAvailable()) {
            Proc py = pythonConsume("nobody-here", 8, "--connect-timeout-s", "2");
            assertEquals(1, py.exitCode(Duration.ofSeconds(30)));
            assertTrue(py.errorLine().contains("no producer named 'nobody-here' appeared within 2 s"), py.errorLine());
            assertTrue(
                    py.errorLine().contains("a feeder (tensorsocket_client.TensorProducer('nobody-here', loader)"),
                    py.errorLine());
        }
    }

    @Test
    void aLoaderThatRaisesReachesEveryConsumerWithItsTypeMessageAndPlace() throws Exception {
        assumePython("numpy", "torch");
        record Case(String name, String kase, String workers, List<String> expected, String... extra) {}
        for (Case k : List.of(
                new Case(
                        "raise-worker",
                        "getitem",
                        "2",
                        List.of("ValueError: cannot decode sample 417: truncated file", "in __getitem__")),
                // the same dataset fed by index (a plain DataLoader(shuffle=True)): the same message and place
                new Case(
                        "raise-by-index",
                        "getitem",
                        "2",
                        List.of("ValueError: cannot decode sample 417: truncated file", "in __getitem__"),
                        "--by-index"),
                new Case(
                        "raise-here",
                        "getitem",
                        "0",
                        List.of("ValueError: cannot decode sample 417: truncated file", "sample index 417")),
                new Case("sizes", "sizes", "0", List.of("RuntimeError: stack expects each tensor to be equal size")))) {
            List<String> args = new ArrayList<>(List.of("--workers", k.workers()));
            args.addAll(List.of(k.extra()));
            Proc feeder = feedCase(k.name(), k.kase(), args.toArray(String[]::new));
            List<Proc> consumers = List.of(pythonConsume(k.name(), 32), consume(k.name(), 64));
            for (Proc c : consumers) {
                assertEquals(1, c.exitCode(Duration.ofSeconds(60)), c.stderr());
                for (String e : k.expected()) {
                    assertTrue(c.errorLine().contains(e), k + ": " + c.errorLine());
                }
                assertTrue(c.errorLine().contains("failed in epoch 0"), c.errorLine());
                assertFalse(c.errorLine().contains("did its process die"), c.errorLine());
            }
            assertNotEquals(0, feeder.exitCode(Duration.ofSeconds(30)));
            assertTrue(feeder.stderr().contains("Traceback (most recent call last)"), feeder.stderr());
            assertTrue(feeder.stderr().contains(k.expected().getFirst()), feeder.stderr());
            assertNothingLeft(k.name(), 30);
        }
    }

    @Test
    void aFeederThatFailsBeforeItsFirstBatchLeavesNothingBehindAndSaysWhy() throws Exception {
        assumePython("numpy", "torch");
        // A string field: refused by name, with what to do, before anything was declared.
        Proc strings = feedCase("strings", "strings");
        Proc waiting = pythonConsume("strings", 32);
        assertNotEquals(0, strings.exitCode(Duration.ofSeconds(60)));
        assertTrue(
                strings.stderr().contains("TypeError: tensor 'path' of the loader's batch holds strings"),
                strings.stderr());
        assertTrue(strings.stderr().contains("names=(...)"), strings.stderr());
        // The producer it started heard why and stopped (its log shares the feeder's stderr, and may end after
        // the feeder did); a consumer that waited for it is told.
        assertNothingLeft("strings", 15);
        assertTrue(
                strings.stderr().contains("stops with it: the feeder failed before it declared its batches"),
                strings.stderr());
        assertEquals(1, waiting.exitCode(Duration.ofSeconds(30)), waiting.stderr());
        assertTrue(
                (waiting.errorLine().contains("producer 'strings' failed before it served: ")
                                && waiting.errorLine().contains("tensor 'path' of the loader's batch holds strings"))
                        || waiting.errorLine().contains("no producer named 'strings' appeared"),
                waiting.errorLine());

        // A loader that cannot load its first sample.
        Proc first = feedCase("first", "first");
        assertNotEquals(0, first.exitCode(Duration.ofSeconds(60)));
        assertTrue(first.stderr().contains("OSError: cannot open the data set's first file"), first.stderr());
        assertNothingLeft("first", 15);
    }

    @Test
    void aFeederKilledWhileItsProducerWaitsForConsumersTakesTheProducerWithIt() throws Exception {
        assumePython("numpy", "torch");
        Proc feeder = feedCase("orphan", "ok", "--opt", "min_consumers=2");
        awaitDirectory("orphan"); // declared: the producer serves, and waits for its two consumers
        assertTrue(Files.exists(base.resolve("orphan").resolve("control.sock")), feeder.stderr());
        feeder.kill();
        assertNothingLeft("orphan", 15);
    }

    @Test
    void aProducerWaitingForItsFeederShowsInListAndStatusAndLeavesNothingAfterSigterm() throws Exception {
        Proc producer = start("serve", "--name", "lonely", "--external");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!Files.exists(base.resolve("lonely").resolve("feeder.sock"))) {
            assertTrue(System.nanoTime() < deadline && producer.isAlive(), producer.stderr());
            Thread.sleep(20);
        }
        Proc list = start("list");
        assertEquals(0, list.exitCode(Duration.ofSeconds(30)), list.stderr());
        assertTrue(
                list.lines().stream()
                        .anyMatch(l -> l.startsWith("lonely")
                                && l.contains(Long.toString(producer.pid()))
                                && l.contains("waiting for a feeder since")),
                list.lines().toString());
        Proc status = start("status", "lonely", "--once");
        assertEquals(0, status.exitCode(Duration.ofSeconds(30)), status.stderr());
        assertTrue(
                status.lines().getFirst().contains("waiting for a feeder since"),
                status.lines().toString());
        assertTrue(
                String.join("\n", status.lines()).contains("TensorProducer(\"lonely\", loader)"),
                status.lines().toString());
        Proc json = start("status", "lonely", "--once", "--json");
        assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
        assertEquals(
                "waiting for feeder",
                json.json().getFirst().get("state"),
                json.lines().toString());
        producer.signal("TERM");
        assertNotEquals(0, producer.exitCode(Duration.ofSeconds(30)));
        assertFalse(Files.exists(base.resolve("lonely")), "SIGTERM while waiting for the feeder left the directory");
    }

    @Test
    void ctrlCOnTheFeederStopsItsProducerCleanlyAndTellsTheConsumers() throws Exception {
        assumePython("numpy", "torch");
        Proc feeder = feedCase("ctrlc", "slow", "--epochs", "3");
        List<Proc> consumers = List.of(pythonConsume("ctrlc", 32), consume("ctrlc", 64));
        awaitDirectory("ctrlc");
        awaitJoined(feeder, 2); // the producer logs to its feeder's stderr
        Thread.sleep(1000); // into epoch 0, which takes 5 s
        feeder.signal("INT");
        assertNotEquals(0, feeder.exitCode(Duration.ofSeconds(30)));
        assertTrue(feeder.stderr().contains("KeyboardInterrupt"), feeder.stderr());
        for (Proc c : consumers) {
            assertEquals(1, c.exitCode(Duration.ofSeconds(30)), c.stderr());
            assertTrue(c.errorLine().contains("producer 'ctrlc' stopped"), c.errorLine());
            assertTrue(c.errorLine().contains("was interrupted (Ctrl-C)"), c.errorLine());
        }
        // The producer's log (the feeder's stderr) has its one line, and no Java stack trace.
        assertTrue(feeder.stderr().contains("producer 'ctrlc' stopped"), feeder.stderr());
        assertFalse(
                feeder.stderr().contains("\tat io.") || feeder.stderr().contains("Exception in thread"),
                feeder.stderr());
        assertNothingLeft("ctrlc", 30);
    }

    @Test
    void aSecondFeederForTheSameNameIsRefusedNamingTheFirst() throws Exception {
        assumePython("numpy", "torch");
        // Three epochs of 5 s: the second feeder's Python, importing torch on a loaded machine, once came after one
        // epoch had ended and with it the first feeder's producer.
        Proc first = feedCase("twice", "slow", "--epochs", "3");
        Proc consumer = pythonConsume("twice", 50);
        awaitDirectory("twice");
        awaitJoined(first, 1); // the first feeder's epochs take 15 s from here
        Proc second = feedCase("twice", "ok");
        assertNotEquals(0, second.exitCode(Duration.ofSeconds(60)));
        assertTrue(
                second.stderr().contains("FeederError: producer 'twice' already has a feeder (pid " + first.pid()),
                second.stderr());
        assertFalse(
                second.stderr().contains("BrokenPipeError") || second.stderr().contains("ConnectionResetError"),
                second.stderr());
        assertEquals(0, consumer.exitCode(Duration.ofSeconds(60)), consumer.stderr());
        consumer.json().forEach(e -> assertExactEpoch(e, 1000, "epoch_start"));
        assertEquals(0, first.exitCode(Duration.ofSeconds(30)), first.stderr());
        assertNothingLeft("twice", 30);
    }

    @Test
    void theReferenceApiWorksAsItsUsersWriteIt() throws Exception {
        assumePython("numpy", "torch");
        // for epoch in range(3): for _ in producer: pass; producer.join(); producer options from Python
        Proc feeder = feedCase(
                "reference",
                "passes",
                "--epochs",
                "3",
                "--opt",
                "rubber_band=5",
                "--opt",
                "slots=12",
                "--opt",
                "min_consumers=2");
        String trainer = pythonClient().resolve("tests/scripts/train_case.py").toString();
        List<Proc> trainers = List.of(
                startPython(Map.of("OMP_NUM_THREADS", "1"), trainer, "reference", "64", "3"),
                startPython(Map.of("OMP_NUM_THREADS", "1"), trainer, "reference", "100", "3"));
        awaitDirectory("reference");
        Proc status = start("status", "reference", "--once", "--json");
        assertEquals(0, status.exitCode(Duration.ofSeconds(30)), status.stderr());
        Map<String, String> s = status.json().getFirst();
        if (!"waiting for feeder".equals(s.get("state"))) {
            assertEquals("5", s.get("rubber_band"), s.toString());
            assertEquals("12", s.get("slots"), s.toString());
        }
        for (Proc t : trainers) {
            assertEquals(0, t.exitCode(Duration.ofSeconds(90)), t.stderr());
            assertEquals(3, t.json().size(), t.lines().toString());
            for (Map<String, String> e : t.json()) {
                assertEquals("true", e.get("exact"), e.toString());
                assertEquals("1000", e.get("samples"), e.toString());
                assertEquals(e.get("len"), e.get("batches"), "len(consumer) is the batches of its epoch: " + e);
                assertEquals("epoch_start", e.get("start"), e.toString());
            }
        }
        // join() returned once the producer had served its consumers and exited: status 0
        assertEquals(0, feeder.exitCode(Duration.ofSeconds(60)), feeder.stderr());
        assertTrue(
                feeder.lines().contains("{\"event\": \"joined\", \"status\": 0}"),
                feeder.lines().toString());
        assertNothingLeft("reference", 10);
    }
}
