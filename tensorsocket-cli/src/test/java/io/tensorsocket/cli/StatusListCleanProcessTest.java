package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** status, list and clean against real producer and consumer JVMs. */
class StatusListCleanProcessTest extends ProcessTestBase {

    @Test
    void statusShowsBothConsumersWithTheirBatchSizesAndListShowsTheProducer() throws Exception {
        serve("st", "samples=4000,shape=3x8x8,dtype=float32,seed=3", 16, 0, "--min-consumers", "2");
        consume("st", 16, "--step-ms", "20");
        consume("st", 40, "--step-ms", "20", "--handoff", "socket");
        Map<String, String> top = null;
        List<Map<String, String>> consumers = List.of();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            Proc status = start("status", "st", "--once", "--json");
            assertEquals(0, status.exitCode(Duration.ofSeconds(30)), status.stderr());
            String line = status.lines().getFirst();
            top = JsonLine.parse(line.substring(0, line.indexOf("\"consumers\": [")));
            consumers = consumerObjects(line);
            if (consumers.size() == 2
                    && consumers.stream()
                            .allMatch(
                                    c -> c.get("reported").equals("true") && Double.parseDouble(c.get("work_s")) > 0)) {
                break;
            }
            Thread.sleep(300);
        }
        assertNotNull(top);
        assertEquals("st", top.get("name"));
        assertEquals("serving", top.get("state"));
        assertEquals("2", top.get("consumers_attached"));
        assertEquals("16", top.get("batch_size"));
        assertEquals("exact", top.get("mid_epoch"), "a synthetic producer chooses the order: " + top);
        assertEquals(2, consumers.size(), consumers.toString());
        assertEquals(
                List.of("16", "40"),
                consumers.stream().map(c -> c.get("batch_size")).sorted().toList());
        assertEquals(
                List.of("16 ring", "40 socket"),
                consumers.stream()
                        .map(c -> c.get("batch_size") + " " + c.get("handoff"))
                        .sorted()
                        .toList());
        for (Map<String, String> c : consumers) {
            assertEquals(System.getProperty("user.name"), c.get("user"));
            assertEquals("true", c.get("reported"), c.toString());
            assertTrue(Double.parseDouble(c.get("work_s")) > 0, c.toString());
        }

        Proc text = start("status", "st", "--once");
        assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
        String view = String.join("\n", text.lines());
        assertTrue(view.contains("producer st") && view.contains("consumers 2 attached"), view);
        assertTrue(view.contains(" handoff ") && view.contains(" ring ") && view.contains(" socket "), view);
        assertTrue(view.contains("one joining mid-epoch starts exact"), view);
        assertFalse(view.contains("\033"), "no terminal control characters when not on a terminal");

        Proc list = start("list");
        assertEquals(0, list.exitCode(Duration.ofSeconds(30)), list.stderr());
        assertTrue(
                list.lines().stream().anyMatch(l -> l.startsWith("st ") && l.contains("serving")),
                list.lines().toString());
    }

    @Test
    void cleanRemovesAKilledProducersLeftoversAndLeavesALiveOneAlone() throws Exception {
        Proc dead = serve("dead", "samples=100,shape=4,dtype=float32,seed=1", 10, 1);
        serve("alive", "samples=100,shape=4,dtype=float32,seed=1", 10, 1);
        dead.kill();
        assertTrue(Files.exists(base.resolve("dead").resolve("control.sock")), "SIGKILL leaves the socket behind");

        Proc clean = start("clean");
        assertEquals(0, clean.exitCode(Duration.ofSeconds(30)), clean.stderr());
        String out = String.join("\n", clean.lines());
        assertTrue(out.contains("removed " + base.resolve("dead")), out);
        assertTrue(out.contains("1 running producer left alone"), out);
        assertFalse(Files.exists(base.resolve("dead")));
        assertTrue(Files.exists(base.resolve("alive").resolve("control.sock")));

        Proc list = start("list");
        assertEquals(0, list.exitCode(Duration.ofSeconds(30)), list.stderr());
        assertTrue(
                list.lines().stream().anyMatch(l -> l.startsWith("alive ")),
                list.lines().toString());
        assertTrue(
                list.lines().stream().noneMatch(l -> l.startsWith("dead ")),
                list.lines().toString());
    }

    @Test
    void listShowsAKilledProducersLeftoversWithTheirSizeAndTheCommandThatFreesThem() throws Exception {
        Proc dead = serve("gone", "samples=1000,shape=256,dtype=float32,seed=1", 100, 1, "--arena-mb", "16");
        dead.kill();
        Proc list = start("list");
        assertEquals(0, list.exitCode(Duration.ofSeconds(30)), list.stderr());
        String out = String.join("\n", list.lines());
        assertTrue(out.startsWith("no producers running in " + base), out);
        // 16 MiB of arena (16.8 MB) and the consumers' descriptor rings (0.5 MB here)
        assertTrue(out.contains("1 stale producer directory (its producer died without cleaning up) holds 17."), out);
        assertTrue(
                list.lines().stream()
                        .anyMatch(l -> l.matches("  gone +" + dead.pid() + " +17\\.\\d MB  " + base.resolve("gone"))),
                out);
        assertTrue(out.endsWith("free them with: tensorsocket clean"), out);

        Proc json = start("list", "--json");
        assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
        Map<String, String> stale = json.json().getFirst();
        assertEquals("stale", stale.get("state"), stale.toString());
        long bytes = Long.parseLong(stale.get("bytes"));
        assertTrue(bytes > 15L << 20 && bytes < 17L << 20, "a 16 MiB arena: " + stale);
    }

    @Test
    void aShareWhoseStartFailedLeavesFilesThatListShowsAndCleanRemoves() throws Exception {
        // What share() leaves when its producer's factory fails: the start lock and the log that says why.
        Files.writeString(base.resolve(".broken.share.lock"), "");
        Files.writeString(base.resolve(".broken.share.log"), "RuntimeError: the data set's root does not exist\n");
        Files.writeString(base.resolve(".logonly.share.log"), "killed\n");
        Proc list = start("list");
        assertEquals(0, list.exitCode(Duration.ofSeconds(30)), list.stderr());
        String out = String.join("\n", list.lines());
        assertTrue(
                out.contains("shares whose last start failed or whose producer was killed left their lock and log"),
                out);
        assertTrue(out.contains("  broken                   " + base.resolve(".broken.share.log")), out);
        assertTrue(out.contains("  logonly                  " + base.resolve(".logonly.share.log")), out);
        Proc json = start("list", "--json");
        assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
        assertEquals(
                "share files left",
                json.json().getFirst().get("state"),
                json.lines().toString());

        Proc clean = start("clean");
        assertEquals(0, clean.exitCode(Duration.ofSeconds(30)), clean.stderr());
        assertTrue(
                String.join("\n", clean.lines()).contains("removed the files share 'broken' left in " + base),
                clean.lines().toString());
        for (String f : List.of(".broken.share.lock", ".broken.share.log", ".logonly.share.log")) {
            assertFalse(Files.exists(base.resolve(f)), f);
        }
        Proc after = start("list");
        assertEquals(0, after.exitCode(Duration.ofSeconds(30)), after.stderr());
        assertFalse(
                String.join("\n", after.lines()).contains("shares whose"),
                after.lines().toString());
    }

    @Test
    void thePythonClientCountsOnlyProducersHoldingTheirLockAsRunning() throws Exception {
        assumePython("numpy");
        serve("up", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        Proc dead = serve("down", "samples=100,shape=4,dtype=float32,seed=1", 10, 0);
        dead.kill();
        Proc c = pythonConsume("nonesuch", 8, "--connect-timeout-s", "1");
        assertNotEquals(0, c.exitCode(Duration.ofSeconds(30)));
        String error = c.errorLine();
        assertTrue(error.contains("running: ['up']"), error);
        // the launcher as the user can type it: here the test's, which is not on PATH
        assertTrue(
                error.endsWith("Left over by producers that died (not running): down; free them with: "
                        + launcherScript() + " clean"),
                error);
    }

    @Test
    void aConsumersSamplesPerSecondInStatusAgreesWithWhatItMeasuresAndEpochsCountFromOne() throws Exception {
        // 20 ms per batch of 32: about 1500 samples/s each, for about 10 s of the 16000-sample epoch, which
        // leaves the two status commands (started together, 4 s in) seconds to spare for their JVMs' start
        serve(
                "rate",
                "samples=16000,shape=8,dtype=float32,seed=3",
                50,
                1,
                "--min-consumers",
                pythonAvailable() ? "2" : "1");
        List<Proc> consumers = new ArrayList<>(List.of(consume("rate", 32, "--step-ms", "20")));
        if (pythonAvailable()) {
            consumers.add(pythonConsume("rate", 32, "--step-ms", "20"));
        }
        Thread.sleep(4000);
        Proc status = start("status", "rate", "--once", "--json");
        Proc text = start("status", "rate", "--once");
        assertEquals(0, status.exitCode(Duration.ofSeconds(30)), status.stderr());
        List<Map<String, String>> shown = consumerObjects(status.lines().getFirst());
        assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
        String view = String.join("\n", text.lines());
        assertTrue(view.contains("epoch    1 of 1 "), "the first epoch is epoch 1: " + view);
        assertEquals(consumers.size(), shown.size(), shown.toString());
        for (Proc c : consumers) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
        }
        List<Double> measured = consumers.stream()
                .map(c -> Double.parseDouble(c.json().getFirst().get("samples_per_s")))
                .sorted()
                .toList();
        List<Double> reported = shown.stream()
                .map(c -> Double.parseDouble(c.get("samples_per_s")))
                .sorted()
                .toList();
        for (int i = 0; i < measured.size(); i++) {
            double ratio = reported.get(i) / measured.get(i);
            assertTrue(
                    ratio > 0.7 && ratio < 1.4,
                    "status showed " + reported + " samples/s where the consumers measured " + measured);
        }
    }

    @Test
    void aConsumerThatHoldsTheOthersBackIsSaidOnceAndMarkedInStatus() throws Exception {
        Proc producer = serve(
                "pace", "samples=100000,shape=8,dtype=float32,seed=5", 10, 0, "--min-consumers", "2", "--lanes", "0");
        Proc fast = consume("pace", 10);
        Proc slow = consume("pace", 10, "--step-ms", "25"); // 5x a fast trial's step and more
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!producer.stderr().contains("sets the pace") && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        String said = producer.stderr()
                .lines()
                .filter(l -> l.contains("sets the pace"))
                .toList()
                .toString();
        assertTrue(said.contains("for consumer ") && said.contains("(pid " + slow.pid() + ", batch size 10)"), said);
        assertTrue(
                said.contains(
                        "the other consumer of the main stream reads at its speed; without it they could read up to "),
                said);
        assertTrue(said.contains("`tensorsocket status pace` marks it"), said);
        assertTrue(said.contains("A larger arena lets the others read ahead of it: this one holds "), said);
        assertTrue(said.contains("(serve --slots or --arena-mb; slots= or arena_mb= in Python)"), said);
        Proc json = start("status", "pace", "--once", "--json");
        assertEquals(0, json.exitCode(Duration.ofSeconds(30)), json.stderr());
        for (Map<String, String> c : consumerObjects(json.lines().getFirst())) {
            boolean isSlow = c.get("pid").equals(Long.toString(slow.pid()));
            assertEquals(Boolean.toString(isSlow), c.get("sets_pace"), c.toString());
            double share = Double.parseDouble(c.get("pace_share"));
            assertTrue(isSlow ? share >= 0.5 && share <= 1 : share < 0.5, c.toString());
        }
        Proc text = start("status", "pace", "--once");
        assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
        String view = String.join("\n", text.lines());
        assertEquals(
                1, view.lines().filter(l -> l.contains("<< sets the pace (")).count(), view);
        assertTrue(view.contains("sets the pace: the producer spent that share of its last 10 s waiting"), view);
        Thread.sleep(PACE_WINDOW_MS); // another window: still the slow one, and said only once
        assertEquals(
                1,
                producer.stderr()
                        .lines()
                        .filter(l -> l.contains("sets the pace"))
                        .count(),
                producer.stderr());
        assertTrue(fast.isAlive() && slow.isAlive());
    }

    private static final long PACE_WINDOW_MS = 10_500;

    /** The objects of the "consumers" array of a status line (flat objects, so splitting on braces is enough). */
    static List<Map<String, String>> consumerObjects(String line) {
        String array = line.substring(line.indexOf("\"consumers\": [") + 14, line.lastIndexOf(']'));
        List<Map<String, String>> out = new ArrayList<>();
        for (String part : array.split("\\}")) {
            int open = part.indexOf('{');
            if (open >= 0) {
                out.add(JsonLine.parse(part.substring(open) + "}"));
            }
        }
        return out;
    }
}
