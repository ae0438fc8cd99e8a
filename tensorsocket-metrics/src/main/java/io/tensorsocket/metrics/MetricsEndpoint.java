package io.tensorsocket.metrics;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.tensorsocket.TensorProducer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Serves a producer's meters (see {@link ProducerMeters}) at {@code http://ADDRESS/metrics} in the
 * Prometheus text format, or OpenMetrics when the scraper asks for it ({@code Accept:
 * application/openmetrics-text}). Uses the JDK's HTTP server; one scrape at a time.
 *
 * <pre>{@code
 * try (MetricsEndpoint m = MetricsEndpoint.start(producer, MetricsEndpoint.parseAddress("127.0.0.1:9464"))) {
 *     producer.run();
 * }
 * }</pre>
 */
public final class MetricsEndpoint implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService executor;
    private final PrometheusMeterRegistry registry;
    private final ProducerMeters meters;

    private MetricsEndpoint(
            HttpServer server, ExecutorService executor, PrometheusMeterRegistry registry, ProducerMeters meters) {
        this.server = server;
        this.executor = executor;
        this.registry = registry;
        this.meters = meters;
    }

    /**
     * Starts serving {@code producer}'s meters on {@code address} (port 0 picks a free one; see
     * {@link #address()}).
     *
     * @throws UncheckedIOException if the address cannot be bound (in use, or not an address of this host)
     */
    public static MetricsEndpoint start(TensorProducer producer, InetSocketAddress address) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        ProducerMeters meters = new ProducerMeters(producer, registry);
        HttpServer server;
        try {
            server = HttpServer.create(address, 0);
        } catch (IOException e) {
            registry.close();
            throw new UncheckedIOException(
                    "cannot serve metrics on " + address + ": " + e
                            + "; choose another port or address with --metrics HOST:PORT",
                    e);
        }
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "tensorsocket-metrics");
            t.setDaemon(true);
            return t;
        });
        MetricsEndpoint endpoint = new MetricsEndpoint(server, executor, registry, meters);
        server.createContext("/metrics", endpoint::handle);
        server.setExecutor(executor);
        server.start();
        return endpoint;
    }

    /**
     * Parses {@code PORT}, {@code HOST:PORT} or {@code [IPV6]:PORT}. A bare port binds the loopback address,
     * so metrics are not exposed beyond this host unless an address is given.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static InetSocketAddress parseAddress(String spec) {
        String s = spec.strip();
        String host = null;
        String port = s;
        int colon = s.lastIndexOf(':');
        if (colon >= 0) {
            host = s.substring(0, colon);
            port = s.substring(colon + 1);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
        }
        int p;
        try {
            p = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            p = -1;
        }
        if (p < 0 || p > 65535 || (host != null && host.isEmpty())) {
            throw new IllegalArgumentException("invalid metrics address '" + spec + "': use PORT (loopback), HOST:PORT"
                    + " or [IPV6]:PORT, e.g. 127.0.0.1:9464");
        }
        if (host == null) {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), p);
        }
        InetSocketAddress a = new InetSocketAddress(host, p);
        if (a.isUnresolved()) {
            throw new IllegalArgumentException("invalid metrics address '" + spec + "': unknown host '" + host + "'");
        }
        return a;
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            if (!"GET".equals(ex.getRequestMethod()) && !"HEAD".equals(ex.getRequestMethod())) {
                ex.getResponseHeaders().set("Allow", "GET, HEAD");
                ex.sendResponseHeaders(405, -1);
                return;
            }
            String accept = ex.getRequestHeaders().getFirst("Accept");
            boolean openMetrics = accept != null && accept.contains("application/openmetrics-text");
            String contentType = openMetrics
                    ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                    : "text/plain; version=0.0.4; charset=utf-8";
            String body;
            int code = 200;
            try {
                meters.refresh();
                body = registry.scrape(contentType);
            } catch (RuntimeException e) {
                // The producer has stopped: say so rather than serve stale numbers.
                code = 503;
                contentType = "text/plain; charset=utf-8";
                body = "producer status unavailable: " + e.getMessage() + "\n";
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", contentType);
            boolean head = "HEAD".equals(ex.getRequestMethod());
            ex.sendResponseHeaders(code, head ? -1 : bytes.length);
            if (!head) {
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(bytes);
                }
            }
        }
    }

    /** The address actually bound (with the chosen port when 0 was asked for). */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** The URL to scrape. */
    public String url() {
        InetSocketAddress a = address();
        String host = a.getAddress().getHostAddress();
        return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort() + "/metrics";
    }

    /** Stops serving. */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
        registry.close();
    }
}
