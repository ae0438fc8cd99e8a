/** The {@code tensorsocket} command line: serve, consume, train, status, list, clean, demo, bench, soak. */
module io.tensorsocket.cli {
    requires io.tensorsocket.core;
    requires io.tensorsocket.pipeline;
    requires io.tensorsocket.djl;
    requires io.tensorsocket.bench;
    requires io.tensorsocket.metrics;
    requires io.tensorsocket.flight;
    requires info.picocli;
    requires org.slf4j;
    requires java.desktop;
    requires java.management;
    requires jdk.management;

    opens io.tensorsocket.cli to
            info.picocli;
}
