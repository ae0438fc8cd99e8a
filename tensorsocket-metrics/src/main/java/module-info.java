/** An opt-in Prometheus/OpenMetrics endpoint for a producer's status, through Micrometer. */
module io.tensorsocket.metrics {
    requires io.tensorsocket.core;
    requires micrometer.core;
    requires micrometer.registry.prometheus;
    requires jdk.httpserver;

    exports io.tensorsocket.metrics;
}
