package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code serve --metrics}: a Prometheus scrape of a producer process while a consumer process reads from it. */
class MetricsProcessTest extends ProcessTestBase {

    @Test
    void serveExposesMetricsOnLoopback() throws Exception {
        Proc producer = serve("metered", "samples=2000,shape=16,seed=5", 10, 1, "--metrics", "127.0.0.1:0");
        Matcher url = Pattern.compile("\"metrics\": \"(http://127\\.0\\.0\\.1:\\d+/metrics)\"")
                .matcher(producer.awaitLine(l -> l.contains("\"event\": \"ready\""), Duration.ofSeconds(5)));
        assertTrue(url.find(), "the ready line names the metrics URL");
        Proc consumer = consume("metered", 10, "--step-ms", "5");
        HttpClient http = HttpClient.newHttpClient();
        String body = "";
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            body = http.send(
                            HttpRequest.newBuilder(URI.create(url.group(1)))
                                    .timeout(Duration.ofSeconds(5))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
            if (body.contains("tensorsocket_consumer_wait_ratio{")
                    && body.contains("tensorsocket_consumers_attached{producer=\"metered\"} 1.0")) {
                break;
            }
            Thread.sleep(200);
        }
        assertTrue(body.contains("tensorsocket_consumers_attached{producer=\"metered\"} 1.0"), body);
        Matcher lag = Pattern.compile("tensorsocket_consumer_lag_samples\\{consumer=\"1\",pid=\"" + consumer.pid()
                        + "\",producer=\"metered\"} (\\S+)")
                .matcher(body);
        assertTrue(lag.find(), body);
        assertTrue(Double.parseDouble(lag.group(1)) >= 0);
        Matcher published = Pattern.compile("tensorsocket_batches_published_total\\{producer=\"metered\"} (\\S+)")
                .matcher(body);
        assertTrue(published.find() && Double.parseDouble(published.group(1)) > 0, body);
        assertEquals(0, consumer.exitCode(Duration.ofSeconds(60)), consumer.stderr());
        assertEquals(0, producer.exitCode(Duration.ofSeconds(60)), producer.stderr());
    }

    @Test
    void aPortInUseIsAClearErrorAndLeavesNothing() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Proc p = start(
                    "serve",
                    "--name",
                    "clash",
                    "--synthetic",
                    "samples=10",
                    "--batch-size",
                    "2",
                    "--metrics",
                    "127.0.0.1:" + taken.getLocalPort());
            assertEquals(1, p.exitCode(Duration.ofSeconds(30)), p.stderr());
            assertTrue(
                    p.errorLine()
                            .startsWith(
                                    "tensorsocket: error: cannot serve metrics on /127.0.0.1:" + taken.getLocalPort()),
                    p.errorLine());
            assertTrue(p.errorLine().contains("choose another port"), p.errorLine());
        }
        assertTrue(!Files.exists(base.resolve("clash")), "the producer's directory is removed");
        Proc bad = start(
                "serve", "--name", "bad", "--synthetic", "samples=10", "--batch-size", "2", "--metrics", "nowhere");
        assertEquals(1, bad.exitCode(Duration.ofSeconds(30)), bad.stderr());
        assertTrue(bad.errorLine().contains("invalid metrics address 'nowhere'"), bad.errorLine());
    }
}
