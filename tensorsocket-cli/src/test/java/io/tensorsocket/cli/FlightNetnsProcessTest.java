package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A producer served over Flight from a second network namespace, reached over a veth pair: a real
 * non-loopback address, so the token is required. Skipped (with the reason) where namespaces cannot be
 * created. The 10.x addresses exist only inside the namespace and on the veth the test creates.
 */
@Tag("timed") // it cuts network links and bounds how long each side takes to notice
class FlightNetnsProcessTest extends ProcessTestBase {
    private final String ns = "tsflight" + ProcessHandle.current().pid();
    private final String hostIf = "tsfh" + ProcessHandle.current().pid() % 100000;
    private final String nsIf = "tsfn" + ProcessHandle.current().pid() % 100000;
    private boolean created;

    private static boolean run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0;
    }

    private void setUpNamespace() throws Exception {
        boolean ok = run("ip", "netns", "add", ns);
        created = ok;
        ok = ok
                && run("ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
                && run("ip", "link", "set", nsIf, "netns", ns)
                && run("ip", "addr", "add", "10.213.77.1/24", "dev", hostIf)
                && run("ip", "link", "set", hostIf, "up")
                && run("ip", "netns", "exec", ns, "ip", "addr", "add", "10.213.77.2/24", "dev", nsIf)
                && run("ip", "netns", "exec", ns, "ip", "link", "set", nsIf, "up")
                && run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
        if (!ok) {
            System.out.println("FlightNetnsProcessTest skipped: cannot create a network namespace and veth pair here"
                    + " (needs root or CAP_NET_ADMIN and the ip tool)");
        }
        Assumptions.assumeTrue(ok, "cannot create a network namespace and veth pair here");
    }

    @AfterEach
    void removeNamespace() throws Exception {
        run("ip", "link", "del", hostIf);
        if (created) {
            run("ip", "netns", "del", ns);
        }
    }

    @Test
    void aConsumerInAnotherNamespaceGetsExactEpochsWithTheTokenAndIsRefusedWithout() throws Exception {
        setUpNamespace();
        List<String> serve = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        serve.addAll(Launcher.javaCommand(
                "serve",
                "--name",
                "far",
                "--synthetic",
                "samples=600,shape=3x4x4,dtype=float32,seed=13",
                "--batch-size",
                "32",
                "--epochs",
                "2",
                "--flight",
                "10.213.77.2:8815",
                "--flight-token",
                "n3tns"));
        Proc producer = startCommand(serve).awaitReady();
        String uri = "grpc://10.213.77.2:8815/far";
        Proc refused = consume(uri, 25);
        assertEquals(1, refused.exitCode(Duration.ofSeconds(30)), refused.stderr());
        assertTrue(refused.errorLine().contains("needs a token"), refused.stderr());
        Proc remote = consume(uri, 25, "--token", "n3tns");
        assertEquals(0, remote.exitCode(Duration.ofSeconds(90)), remote.stderr());
        assertEquals(2, remote.json().size(), remote.json().toString());
        for (Map<String, String> e : remote.json()) {
            assertExactEpoch(e, 600, "epoch_start");
        }
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
    }

    @Test
    void statusOverFlightShowsTheRemoteConsumerWithItsHost() throws Exception {
        setUpNamespace();
        List<String> serve = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        serve.addAll(Launcher.javaCommand(
                "serve",
                "--name",
                "far",
                "--synthetic",
                "samples=20000,shape=4,dtype=float32,seed=3",
                "--batch-size",
                "32",
                "--epochs",
                "0",
                "--loader-delay-ms",
                "20",
                "--flight",
                "10.213.77.2:8815",
                "--flight-token",
                "n3tns"));
        Proc producer = startCommand(serve).awaitReady();
        String uri = "grpc://10.213.77.2:8815/far";
        Proc remote = consume(uri, 25, "--token", "n3tns", "--epochs", "1");
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!producer.stderr().contains("attached") && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        // the serving side counts the remote consumer as one attached consumer, shown with its host
        Proc status = start("status", uri, "--once", "--json", "--token", "n3tns");
        assertEquals(0, status.exitCode(Duration.ofSeconds(30)), status.stderr() + "\nserver: " + producer.stderr());
        List<Map<String, String>> consumers =
                StatusListCleanProcessTest.consumerObjects(status.lines().getFirst());
        assertEquals(1, consumers.size(), consumers.toString());
        assertTrue(consumers.getFirst().get("client").matches("flight 10\\.213\\.77\\.1:\\d+"), consumers.toString());
        assertEquals(0, remote.exitCode(Duration.ofSeconds(90)), remote.stderr());
        assertExactEpoch(remote.json().getFirst(), 20000, "epoch_start");
    }

    /**
     * A remote consumer whose link is cut (its end of the veth set down: what the server sends is dropped
     * silently) no longer holds the producer's local consumers up for the stall timeout: the server drops the
     * connection after its link timeout (2 s) and releases what the stream held. The remote reads slower than the
     * server sends, so at the cut its stream may wait on HTTP/2 flow control with nothing in flight: then the
     * server's own probe is what goes unacknowledged (gRPC's keepalive pings no more often than every 10 s; with
     * only that, the local consumer here waited 7 s).
     */
    @Test
    void aCutLinkToARemoteConsumerHoldsTheLocalConsumersUpForSecondsNotTheStallTimeout() throws Exception {
        setUpNamespace();
        start(
                        "serve",
                        "--name",
                        "near",
                        "--synthetic",
                        "samples=2000,shape=3x32x32,dtype=float32,seed=5",
                        "--batch-size",
                        "32",
                        "--epochs",
                        "0",
                        "--stall-timeout-s",
                        "12",
                        "--start-grace-ms",
                        "0",
                        "--flight",
                        "10.213.77.1:8816",
                        "--flight-token",
                        "n3tns")
                .awaitReady();
        List<String> remoteCmd = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        remoteCmd.addAll(Launcher.javaCommand(
                "consume",
                "--name",
                "grpc://10.213.77.1:8816/near",
                "--batch-size",
                "40",
                "--token",
                "n3tns",
                "--step-ms",
                "2"));
        Proc remote = startCommand(remoteCmd);
        remote.awaitLine(l -> l.contains("\"epoch\""), Duration.ofSeconds(60));
        Proc local = consume("near", 40, "--epochs", "40", "--step-ms", "3", "--wait-for-epoch-start");
        local.awaitLine(l -> l.contains("\"epoch\""), Duration.ofSeconds(60));
        assertTrue(run("ip", "netns", "exec", ns, "ip", "link", "set", nsIf, "down"), "cannot set the veth down");
        long cut = System.nanoTime();
        assertEquals(1, remote.exitCode(Duration.ofSeconds(30)), remote.stderr());
        System.out.println("remote consumer behind the cut link failed after " + (System.nanoTime() - cut) / 1_000_000
                + " ms: " + remote.errorLine());
        assertEquals(0, local.exitCode(Duration.ofMinutes(2)), local.stderr());
        long longest = 0;
        for (Map<String, String> e : local.json()) {
            assertExactEpoch(e, 2000, "epoch_start");
            longest = Math.max(longest, Long.parseLong(e.get("longest_wait_ms")));
        }
        System.out.println("local consumer's longest wait for a batch across the cut: " + longest + " ms");
        assertTrue(
                longest < 6000,
                "the local consumer waited " + longest + " ms for one batch (the stall timeout is 12 s)");
    }
}
