/** The benchmark harness (consumer JVMs, hand-off and fan-out runs) and the JMH micro-benchmarks. */
module io.tensorsocket.bench {
    requires io.tensorsocket.core;
    requires org.slf4j;
    requires jmh.core;
    requires jdk.management;

    exports io.tensorsocket.bench to
            io.tensorsocket.cli;

    opens io.tensorsocket.bench.jmh to
            jmh.core;
    opens io.tensorsocket.bench.jmh.jmh_generated to
            jmh.core;
}
