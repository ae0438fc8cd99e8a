package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Remote consumers and relays over Arrow Flight on loopback, with real producer and consumer JVMs. */
class FlightProcessTest extends ProcessTestBase {

    private static void assertExact(Proc c, int epochs, long samples) throws InterruptedException {
        assertEquals(0, c.exitCode(Duration.ofSeconds(90)), c.stderr());
        assertEquals(epochs, c.json().size(), c.json().toString());
        for (Map<String, String> e : c.json()) {
            assertExactEpoch(e, samples, "epoch_start");
        }
    }

    @Test
    void remoteAndLocalConsumersOfMixedBatchSizesGetExactEpochs() throws Exception {
        int port = freePort();
        serve(
                "mix",
                "samples=1000,shape=3x5x7,dtype=float32,seed=11",
                64,
                2,
                "--min-consumers",
                "4",
                "--flight",
                "127.0.0.1:" + port);
        Proc local = consume("mix", 7);
        Proc remote13 = consume(uri(port, "mix"), 13);
        Proc remote64 = consume(uri(port, "mix"), 64);
        Proc remote1000 = consume(uri(port, "mix"), 1000);
        for (Proc c : List.of(local, remote13, remote64, remote1000)) {
            assertExact(c, 2, 1000);
        }
        assertEquals("77", remote13.json().get(0).get("batches"));
    }

    @Test
    void remoteConsumerWithDropLastSeesOnlyFullBatches() throws Exception {
        int port = freePort();
        serve("drop", "samples=100,shape=4,dtype=int32,seed=5", 8, 1, "--flight", "127.0.0.1:" + port);
        Proc c = consume(uri(port, "drop"), 30, "--drop-last");
        assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
        Map<String, String> e = c.json().get(0);
        assertEquals("90", e.get("samples"), e.toString());
        assertEquals("3", e.get("batches"), e.toString());
        assertEquals("0", e.get("corrupt"), e.toString());
    }

    @Test
    void lateRemoteJoinerInsideTheRubberBandStartsAtTheEpochStart() throws Exception {
        // 400 ms per batch and a band as long as the epoch keep its first batch for 8 s. A joiner that
        // arrives later than that (a loaded machine) starts at the next epoch's start instead: either way
        // it starts at an epoch start and every epoch it sees is exact, up to the producer's last.
        int port = freePort();
        Proc producer = serve(
                "late",
                "samples=200,shape=4,dtype=float32,seed=1",
                10,
                2,
                "--loader-delay-ms",
                "400",
                "--rubber-band",
                "20",
                "--flight",
                "127.0.0.1:" + port);
        Proc first = consume("late", 10);
        awaitJoined(producer, 1);
        Thread.sleep(1000);
        Proc late = consume(uri(port, "late"), 7);
        assertExact(first, 2, 200);
        assertEquals(0, late.exitCode(Duration.ofSeconds(90)), late.stderr());
        List<Map<String, String>> epochs = late.json();
        assertTrue(!epochs.isEmpty(), late.stderr());
        for (Map<String, String> e : epochs) {
            assertExactEpoch(e, 200, "epoch_start");
        }
        assertEquals("1", epochs.getLast().get("epoch"), epochs.toString());
    }

    @Test
    void killedRemoteConsumerDoesNotStallTheLocalOnes() throws Exception {
        int port = freePort();
        Proc producer = serve(
                "rkill",
                "samples=3000,shape=8,dtype=float32,seed=3",
                20,
                2,
                "--min-consumers",
                "2",
                "--stall-timeout-s",
                "60",
                "--flight",
                "127.0.0.1:" + port);
        Proc local = consume("rkill", 20, "--step-ms", "2");
        Proc remote = consume(uri(port, "rkill"), 20, "--step-ms", "20", "--progress-ms", "100");
        remote.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30));
        long killed = System.nanoTime();
        remote.kill();
        assertExact(local, 2, 3000);
        assertTrue(
                System.nanoTime() - killed < Duration.ofSeconds(30).toNanos(),
                "the local consumer waited for the stall timeout");
        producer.awaitLine(l -> l.contains("finished"), Duration.ofSeconds(30));
        assertTrue(producer.stderr().contains("left"), producer.stderr());
    }

    @Test
    void remoteConsumerFailsWithinSecondsWhenTheServerIsKilled() throws Exception {
        int port = freePort();
        Proc producer = serve(
                "skill",
                "samples=100000,shape=8,dtype=float32,seed=4",
                10,
                0,
                "--loader-delay-ms",
                "20",
                "--flight",
                "127.0.0.1:" + port);
        Proc remote = consume(uri(port, "skill"), 10, "--progress-ms", "100");
        remote.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30));
        long killed = System.nanoTime();
        producer.kill();
        int code = remote.exitCode(Duration.ofSeconds(10));
        double seconds = (System.nanoTime() - killed) / 1e9;
        assertNotEquals(0, code);
        assertTrue(seconds < 4, "took " + seconds + " s to notice");
        assertTrue(remote.errorLine().contains("grpc://127.0.0.1:" + port + "/skill"), remote.stderr());
    }

    @Test
    void aMissingOrWrongTokenIsRefusedWithAClearMessage() throws Exception {
        int port = freePort();
        serve(
                "tok",
                "samples=100,shape=4,dtype=float32,seed=6",
                10,
                1,
                "--flight",
                "127.0.0.1:" + port,
                "--flight-token",
                "s3cret");
        Proc none = consume(uri(port, "tok"), 10);
        assertEquals(1, none.exitCode(Duration.ofSeconds(30)), none.stderr());
        assertTrue(none.errorLine().contains("needs a token"), none.stderr());
        Proc wrong = consume(uri(port, "tok"), 10, "--token", "guess");
        assertEquals(1, wrong.exitCode(Duration.ofSeconds(30)), wrong.stderr());
        assertTrue(wrong.errorLine().contains("does not match"), wrong.stderr());
        Proc right = consume(uri(port, "tok"), 10, "--token", "s3cret");
        assertExact(right, 1, 100);
    }

    @Test
    void aNonLoopbackAddressWithoutATokenIsRefused() throws Exception {
        Proc p = start(
                "serve",
                "--name",
                "open",
                "--synthetic",
                "samples=10,shape=1,dtype=float32,seed=1",
                "--batch-size",
                "5",
                "--flight",
                "0.0.0.0:" + freePort());
        assertNotEquals(0, p.exitCode(Duration.ofSeconds(30)));
        assertTrue(p.errorLine().contains("needs a shared token"), p.stderr());
    }

    @Test
    void aWrongProducerNameIsNotFound() throws Exception {
        int port = freePort();
        serve("right", "samples=100,shape=4,dtype=float32,seed=6", 10, 1, "--flight", "127.0.0.1:" + port);
        Proc c = consume(uri(port, "wrong"), 10);
        assertEquals(1, c.exitCode(Duration.ofSeconds(30)), c.stderr());
        assertTrue(c.errorLine().contains("serves producer 'right', not 'wrong'"), c.stderr());
    }

    @Test
    void garbageOnTheFlightPortIsAnsweredWithAnErrorAndServingGoesOn() throws Exception {
        int port = freePort();
        serve("garbage", "samples=500,shape=4,dtype=float32,seed=8", 10, 1, "--flight", "127.0.0.1:" + port);
        byte[] answer;
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.write(new byte[] {(byte) 0xde, (byte) 0xad, (byte) 0xbe, (byte) 0xef, 0, 0, 0, 0, 1, 2, 3});
            out.flush();
            InputStream in = s.getInputStream();
            answer = in.readNBytes(64);
        }
        // HTTP/2 answers a bad connection preface with its SETTINGS and then a GOAWAY frame (type 7) whose
        // error code is PROTOCOL_ERROR (1), then closes.
        boolean goAway = false;
        for (int at = 0; at + 9 <= answer.length && !goAway; ) {
            int length = (answer[at] & 0xff) << 16 | (answer[at + 1] & 0xff) << 8 | (answer[at + 2] & 0xff);
            goAway = answer[at + 3] == 7 && at + 17 <= answer.length && answer[at + 16] == 1;
            at += 9 + length;
        }
        assertTrue(goAway, "no GOAWAY(PROTOCOL_ERROR) frame: " + Arrays.toString(answer));
        Proc c = consume(uri(port, "garbage"), 10);
        assertExact(c, 1, 500);
    }

    @Test
    void statusShowsARemoteConsumerWithItsHostOnTheServingHostAndOverFlight() throws Exception {
        int port = freePort();
        serve(
                "stat",
                "samples=100000,shape=8,dtype=float32,seed=2",
                10,
                0,
                "--flight",
                "127.0.0.1:" + port,
                "--flight-token",
                "s3cret");
        consume("stat", 10, "--step-ms", "20");
        Proc remote = consume(uri(port, "stat"), 10, "--step-ms", "20", "--progress-ms", "100", "--token", "s3cret");
        remote.awaitLine(l -> l.contains("\"progress\""), Duration.ofSeconds(30));
        Proc local = start("status", "stat", "--once", "--json");
        Proc overFlight = start("status", uri(port, "stat"), "--once", "--json", "--token", "s3cret");
        Proc text = start("status", uri(port, "stat"), "--once", "--token", "s3cret");
        for (Proc s : List.of(local, overFlight)) {
            assertEquals(0, s.exitCode(Duration.ofSeconds(30)), s.stderr());
            List<Map<String, String>> consumers =
                    StatusListCleanProcessTest.consumerObjects(s.lines().getFirst());
            assertEquals(2, consumers.size(), consumers.toString());
            List<String> clients =
                    consumers.stream().map(c -> c.get("client")).sorted().toList();
            assertTrue(clients.get(0).startsWith("/") || clients.get(0).contains("java"), clients.toString());
            assertTrue(clients.get(1).matches("flight 127\\.0\\.0\\.1:\\d+"), clients.toString());
        }
        assertEquals(0, text.exitCode(Duration.ofSeconds(30)), text.stderr());
        assertTrue(String.join("\n", text.lines()).contains("producer stat"), String.join("\n", text.lines()));
        assertTrue(
                String.join("\n", text.lines()).matches("(?s).*flight 127\\.0\\.0\\.1:\\d+.*"),
                String.join("\n", text.lines()));
        Proc refused = start("status", uri(port, "stat"), "--once");
        assertEquals(1, refused.exitCode(Duration.ofSeconds(30)), refused.stderr());
        assertTrue(refused.errorLine().contains("needs a token"), refused.stderr());
    }

    @Test
    void aRelaysLocalConsumersGetExactEpochs() throws Exception {
        int port = freePort();
        serve("upstream", "samples=900,shape=2x3,dtype=float32,seed=9", 50, 2, "--flight", "127.0.0.1:" + port);
        Proc relay = start(
                        "serve",
                        "--name",
                        "relay",
                        "--from",
                        uri(port, "upstream"),
                        "--batch-size",
                        "32",
                        "--epochs",
                        "2",
                        "--min-consumers",
                        "2")
                .awaitReady();
        Proc a = consume("relay", 10);
        Proc b = consume("relay", 32);
        assertExact(a, 2, 900);
        assertExact(b, 2, 900);
        assertEquals(0, relay.exitCode(Duration.ofSeconds(60)), relay.stderr());
    }

    @Test
    void aRelayWhoseConsumersLeftReadsOnAndDoesNotHoldItsUpstreamsOtherReaders() throws Exception {
        // The upstream starts once both its readers (the relay, a remote consumer) are there, and waits up to its stall
        // timeout (30 s) for a reader that holds a batch. The relay's only consumer reads one epoch of four and
        // leaves: a relay that paused for a consumer of its own would hold the remote consumer for those 30 s, once
        // the batches it did not read (about 1 MB each) had filled the stream's flow-control window and its arena.
        int port = freePort();
        Proc upstream = serve(
                "upheld",
                "samples=1200,shape=3x64x64,dtype=float32,seed=12",
                20,
                4,
                "--flight",
                "127.0.0.1:" + port,
                "--min-consumers",
                "2",
                "--loader-delay-ms",
                "10",
                "--stall-timeout-s",
                "30");
        Proc relay = start(
                        "serve",
                        "--name",
                        "idlerelay",
                        "--from",
                        uri(port, "upheld"),
                        "--batch-size",
                        "20",
                        "--epochs",
                        "0",
                        "--idle-timeout-s",
                        "60")
                .awaitReady();
        Proc local = consume("idlerelay", 20, "--epochs", "1");
        Proc remote = consume(uri(port, "upheld"), 20);
        assertExact(local, 1, 1200);
        assertExact(remote, 4, 1200);
        for (Map<String, String> e : remote.json()) {
            assertTrue(
                    Long.parseLong(e.get("longest_wait_ms")) < 15_000,
                    "the remote consumer waited as if for the idle relay: " + e);
        }
        assertTrue(relay.stderr().contains("relay 'idlerelay' reads its upstream on for no one"), relay.stderr());
        assertEquals(0, upstream.exitCode(Duration.ofSeconds(60)), upstream.stderr());
        assertFalse(upstream.stderr().contains("stall timeout"), upstream.stderr());
        relay.signal("TERM");
        relay.exitCode(Duration.ofSeconds(30));
    }
}
