package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Trials of different speeds as users launch them, each a `consume` process: the slow one is served from a lane of
 * its own while the fast ones read at their speed, every epoch of every trial exact; status shows who is in which lane
 * and what it costs; a trial SIGKILLed in its lane frees it for the next.
 */
class LaneProcessTest extends ProcessTestBase {

    @Test
    void aSlowTrialReadsFromALaneWhileTheFastOnesReadAtTheirSpeed() throws Exception {
        Proc producer = serve(
                "lanes",
                "samples=2000,shape=8,dtype=float32,seed=6",
                20,
                3,
                "--min-consumers",
                "3",
                "--slots",
                "16",
                "--lane-idle-cores",
                "0"); // the lane's mechanics, whatever else the machine runs
        Proc a = consume("lanes", 20, "--step-ms", "1");
        Proc b = consume("lanes", 50, "--step-ms", "2");
        Proc slow = consume("lanes", 20, "--step-ms", "25");
        Map<String, String> line = awaitLane(producer, "lanes", slow, 0);
        assertTrue(Long.parseLong(line.get("lane_samples")) >= 0, line.toString());
        Proc text = start("status", "lanes", "--once");
        assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
        String view = String.join("\n", text.lines());
        assertTrue(view.contains("in lane " + line.get("lane") + " ("), view + producer.stderr());
        assertTrue(view.contains("in lane: it fell behind the others"), view);
        for (Proc fast : List.of(a, b)) {
            assertEquals(0, fast.exitCode(Duration.ofSeconds(60)), fast.stderr());
        }
        assertTrue(slow.isAlive(), "the fast trials finished first: they did not wait for the slow one");
        assertEquals(0, slow.exitCode(Duration.ofSeconds(60)), slow.stderr());
        for (Proc c : List.of(a, b, slow)) {
            assertEquals(3, c.json().size(), c.json().toString());
            for (Map<String, String> e : c.json()) {
                assertExactEpoch(e, 2000, "epoch_start");
            }
        }
        assertTrue(
                producer.stderr().contains("moves consumer ")
                        && producer.stderr().contains("(pid " + slow.pid() + ", batch size 20) to lane "),
                producer.stderr());
    }

    @Test
    void aTrialKilledInItsLaneFreesItForTheNextAndTheOthersStayExact() throws Exception {
        Proc producer = serve(
                "lanekill",
                "samples=2000,shape=8,dtype=float32,seed=7",
                20,
                0, // without end: the next trial's epoch, begun wherever it joins, ends before the stream does
                "--min-consumers",
                "2",
                "--slots",
                "16",
                "--lanes",
                "1",
                "--lane-idle-cores",
                "0");
        // reads until this test stops it, after the next trial: every epoch it finished must be exact
        Proc fast = consume("lanekill", 20, "--step-ms", "3");
        Proc victim = consume("lanekill", 20, "--step-ms", "30");
        awaitLane(producer, "lanekill", victim, 1);
        Path laneFile = base.resolve("lanekill/lane-1");
        assertTrue(Files.exists(laneFile), "the lane's arena");
        victim.kill();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (Files.exists(laneFile) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertFalse(Files.exists(laneFile), "the killed trial's lane ended and removed its arena");
        Proc next = consume("lanekill", 20, "--step-ms", "30", "--epochs", "1");
        awaitLane(producer, "lanekill", next, 1);
        assertEquals(0, next.exitCode(Duration.ofSeconds(90)), next.stderr());
        assertTrue(fast.isAlive(), fast.stderr());
        fast.kill();
        assertTrue(fast.json().size() >= 2, fast.json().toString());
        for (Map<String, String> e : fast.json()) {
            assertExactEpoch(e, 2000, "epoch_start");
        }
        for (Map<String, String> e : next.json()) {
            assertExactEpoch(e, 2000);
        }
    }

    @Test
    void trialsWhosePaceIsTheirOwnStepGetNoLane() throws Exception {
        // Three trainers of one step speed over a small arena: by chance each is behind now and then, and the producer
        // waits for it while another has read everything; none reads slower by its own step, so none is anyone's
        // laggard (any host CPU would do: the rule is the pace's).
        Proc producer = serve(
                "evenpace",
                "samples=2000,shape=8,dtype=float32,seed=8",
                20,
                3,
                "--min-consumers",
                "3",
                "--slots",
                "8",
                "--lane-idle-cores",
                "0");
        List<Proc> trainers = List.of(
                consume("evenpace", 20, "--step-ms", "15"),
                consume("evenpace", 20, "--step-ms", "15"),
                consume("evenpace", 20, "--step-ms", "15"));
        for (Proc t : trainers) {
            assertEquals(0, t.exitCode(Duration.ofMinutes(2)), t.stderr());
            assertEquals(3, t.json().size(), t.json().toString());
            for (Map<String, String> e : t.json()) {
                assertExactEpoch(e, 2000, "epoch_start");
            }
        }
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
        assertFalse(producer.stderr().contains("to lane "), producer.stderr());
    }

    @Test
    void aSlowTrialOnAHostWithoutTheIdleCpuForALaneSetsThePaceAndSaysWhy() throws Exception {
        Proc producer = serve(
                "busyhost",
                "samples=1000,shape=8,dtype=float32,seed=9",
                20,
                2,
                "--min-consumers",
                "2",
                "--slots",
                "16",
                "--lane-idle-cores",
                "64"); // more idle cores than this machine has
        Proc fast = consume("busyhost", 20, "--step-ms", "1");
        Proc slow = consume("busyhost", 20, "--step-ms", "25");
        for (Proc t : List.of(fast, slow)) {
            assertEquals(0, t.exitCode(Duration.ofMinutes(2)), t.stderr());
            for (Map<String, String> e : t.json()) {
                assertExactEpoch(e, 1000, "epoch_start");
            }
        }
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
        String log = producer.stderr();
        assertTrue(
                log.contains("(pid " + slow.pid() + ", batch size 20) to a lane of its own (it holds the others back),"
                                + " but this host left ")
                        && log.contains("cores idle over the last 10 s, fewer than the 64.0 a lane would spend")
                        && log.contains("serve --lane-idle-cores"),
                log);
        assertFalse(log.contains("to lane "), log);
    }

    /** Waits until status shows {@code c} read from lane {@code lane} (0: any lane); its status line. */
    private Map<String, String> awaitLane(Proc producer, String name, Proc c, int lane) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            Proc status = start("status", name, "--once", "--json");
            if (status.exitCode(Duration.ofSeconds(30)) == 0 && !status.lines().isEmpty()) {
                for (Map<String, String> s : StatusListCleanProcessTest.consumerObjects(
                        status.lines().getFirst())) {
                    boolean inLane = lane == 0
                            ? !s.get("lane").equals("0")
                            : s.get("lane").equals(Integer.toString(lane));
                    if (s.get("pid").equals(Long.toString(c.pid())) && inLane) {
                        return s;
                    }
                }
            }
            Thread.sleep(200);
        }
        throw new AssertionError("consumer " + c.pid() + " never showed in lane " + (lane == 0 ? "any" : lane) + ": "
                + producer.stderr());
    }
}
