import io.tensorsocket.flight.FlightConnector;
import io.tensorsocket.spi.RemoteConnector;

/**
 * TensorSocket over Apache Arrow Flight: serve a producer to other hosts, consume it remotely, relay a
 * remote stream into a local producer.
 */
module io.tensorsocket.flight {
    requires transitive io.tensorsocket.core;
    requires org.apache.arrow.flight.core;
    requires org.apache.arrow.vector;
    requires org.apache.arrow.memory.core;
    requires org.apache.arrow.format;
    requires arrow.memory.netty;
    requires io.grpc;
    requires io.grpc.netty;
    requires io.netty.buffer;
    requires io.netty.transport;
    requires io.netty.codec;
    requires io.netty.codec.http2;
    requires io.netty.transport.classes.epoll;
    requires io.netty.common;
    requires org.slf4j;
    requires java.logging;

    exports io.tensorsocket.flight;

    provides RemoteConnector with
            FlightConnector;
}
