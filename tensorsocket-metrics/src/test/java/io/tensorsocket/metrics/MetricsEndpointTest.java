package io.tensorsocket.metrics;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Scrapes a real producer's endpoint over loopback while it serves a real consumer. */
@Timeout(60)
class MetricsEndpointTest {
    @TempDir
    Path tmp;

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> get(String url, String accept) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10));
        if (accept != null) {
            r.header("Accept", accept);
        }
        return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Every sample line of a Prometheus text scrape: "name{labels}" → value; fails on a line that does not parse. */
    private static Map<String, Double> parse(String body) {
        Map<String, Double> samples = new HashMap<>();
        for (String line : body.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            assertTrue(space > 0, "malformed line: " + line);
            String key = line.substring(0, space);
            assertTrue(key.matches("[a-zA-Z_:][a-zA-Z0-9_:]*(\\{.*})?"), "malformed metric name: " + line);
            samples.put(key, Double.parseDouble(line.substring(space + 1)));
        }
        return samples;
    }

    private static double value(Map<String, Double> samples, String name, String... labels) {
        return samples.entrySet().stream()
                .filter(e -> e.getKey().equals(name) || e.getKey().startsWith(name + "{"))
                .filter(e -> Arrays.stream(labels).allMatch(l -> e.getKey().contains(l)))
                .mapToDouble(Map.Entry::getValue)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no " + name + " " + Arrays.toString(labels) + " in " + samples));
    }

    @Test
    void aScrapeShowsWhatStatusShows() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=400,shape=4,dtype=float32,seed=2");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("m"))
                        .source(new SyntheticSource(spec, 10))
                        .slots(8)
                        .build()
                        .start();
                MetricsEndpoint m = MetricsEndpoint.start(p, MetricsEndpoint.parseAddress("0"));
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("m"), ConsumerOptions.batchSize(10))) {
            assertTrue(m.address().getAddress().isLoopbackAddress(), "a bare port binds loopback: " + m.address());
            Iterator<Batch> it = c.iterator();
            Batch held = null;
            for (int i = 0; i < 3; i++) {
                held = it.next();
            }
            // Holding the third batch: the producer fills the arena and stops, so lag and slots settle.
            String consumer = "consumer=\"1\"";
            String pid = "pid=\"" + ProcessHandle.current().pid() + "\"";
            Map<String, Double> s = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (System.nanoTime() < deadline) {
                HttpResponse<String> r = get(m.url(), null);
                assertEquals(200, r.statusCode(), r.body());
                assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain; version=0.0.4"));
                s = parse(r.body());
                if (s.keySet().stream().anyMatch(k -> k.startsWith("tensorsocket_consumer_wait_ratio{"))
                        && value(s, "tensorsocket_slots_in_use") == 8) {
                    break;
                }
                Thread.sleep(200);
            }
            assertNotNull(s);
            String producer = "producer=\"m\"";
            assertEquals(8, value(s, "tensorsocket_slots", producer));
            assertEquals(8, value(s, "tensorsocket_slots_in_use", producer), "the held batch pins the arena full");
            assertEquals(1, value(s, "tensorsocket_consumers_attached", producer));
            double published = value(s, "tensorsocket_batches_published_total", producer);
            assertTrue(published >= 8 && published <= 10, "published " + published);
            assertEquals(published * 10, value(s, "tensorsocket_samples_published_total", producer));
            // The consumer released the first two batches (20 samples); everything published beyond is lag.
            assertEquals(published * 10 - 20, value(s, "tensorsocket_consumer_lag_samples", consumer, pid, producer));
            // Held counts every batch sent to the consumer and not yet released, read ahead or not.
            assertEquals(published - 2, value(s, "tensorsocket_consumer_batches_held", consumer, pid));
            double wait = value(s, "tensorsocket_consumer_wait_ratio", consumer, pid);
            assertTrue(wait >= 0 && wait <= 1, "wait ratio " + wait);
            assertEquals(0, value(s, "tensorsocket_loader_errors_total", producer));
            for (String cache : List.of(
                    "tensorsocket_cache_bytes",
                    "tensorsocket_cache_samples",
                    "tensorsocket_cache_hits_total",
                    "tensorsocket_cache_loads_total")) {
                assertEquals(0, value(s, cache, producer), "a source without a cache: " + cache);
            }
            for (String name : new String[] {
                "tensorsocket_samples_per_second",
                "tensorsocket_batches_per_second",
                "tensorsocket_epoch",
                "tensorsocket_epoch_progress",
                "tensorsocket_uptime_seconds",
                "tensorsocket_consumer_samples_per_second"
            }) {
                assertTrue(value(s, name) >= 0, name);
            }

            HttpResponse<String> om = get(m.url(), "application/openmetrics-text; version=1.0.0");
            assertTrue(om.headers().firstValue("Content-Type").orElse("").startsWith("application/openmetrics-text"));
            assertTrue(om.body().endsWith("# EOF\n"), "OpenMetrics ends with # EOF");
            assertTrue(om.body().contains("# TYPE tensorsocket_batches_published counter"), om.body());

            held.close();
            c.close();
            long gone = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (System.nanoTime() < gone
                    && value(parse(get(m.url(), null).body()), "tensorsocket_consumers_attached") != 0) {
                Thread.sleep(100);
            }
            Map<String, Double> after = parse(get(m.url(), null).body());
            assertEquals(0, value(after, "tensorsocket_consumers_attached"));
            assertTrue(
                    after.keySet().stream().noneMatch(k -> k.startsWith("tensorsocket_consumer_lag_samples{")),
                    "a consumer that left has no meters: " + after);
            assertEquals(
                    405,
                    http.send(
                                    HttpRequest.newBuilder(URI.create(m.url()))
                                            .POST(HttpRequest.BodyPublishers.noBody())
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString())
                            .statusCode());
        }
    }

    @Test
    void aConsumerEvictedForStallingIsCounted() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("samples=400,shape=4,dtype=float32,seed=3");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("e"))
                        .source(new SyntheticSource(spec, 10))
                        .slots(6)
                        .stallTimeout(Duration.ofMillis(300))
                        .startGrace(Duration.ZERO)
                        .build()
                        .start();
                MetricsEndpoint m = MetricsEndpoint.start(p, MetricsEndpoint.parseAddress("0"));
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("e"), ConsumerOptions.batchSize(10))) {
            String producer = "producer=\"e\"";
            assertEquals(0, value(parse(get(m.url(), null).body()), "tensorsocket_consumers_evicted_total", producer));
            Batch held = c.iterator().next(); // never released: the producer needs its slot and evicts the consumer
            double evicted = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (System.nanoTime() < deadline && evicted == 0) {
                Thread.sleep(100);
                evicted = value(parse(get(m.url(), null).body()), "tensorsocket_consumers_evicted_total", producer);
            }
            assertEquals(1, evicted);
            assertEquals(1, p.status().evictions());
            held.close();
        }
    }

    @Test
    void addressesBindLoopbackUnlessGiven() {
        InetSocketAddress bare = MetricsEndpoint.parseAddress("9464");
        assertEquals(InetAddress.getLoopbackAddress(), bare.getAddress());
        assertEquals(9464, bare.getPort());
        assertEquals(
                "127.0.0.1",
                MetricsEndpoint.parseAddress("127.0.0.1:9464").getAddress().getHostAddress());
        assertEquals(9464, MetricsEndpoint.parseAddress("[::1]:9464").getPort());
        for (String bad : new String[] {"", "abc", "host:", ":9464", "127.0.0.1:70000", "127.0.0.1:-1"}) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> MetricsEndpoint.parseAddress(bad));
            assertTrue(e.getMessage().startsWith("invalid metrics address '" + bad + "'"), e.getMessage());
        }
    }
}
