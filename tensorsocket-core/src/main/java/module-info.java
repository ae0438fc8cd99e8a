import io.tensorsocket.spi.RemoteConnector;

/**
 * TensorSocket core: one data loader (a {@link io.tensorsocket.TensorProducer}) serving batches to many
 * training processes ({@link io.tensorsocket.TensorConsumer}) through shared memory, with control over a
 * Unix-domain socket.
 *
 * <p>Users see {@code io.tensorsocket} (the API), {@code io.tensorsocket.source} (ready-made batch
 * sources) and {@code io.tensorsocket.external} (producers fed by another process). The consumer's engine
 * interface ({@code spi}), the wire protocol, the arena, the rings, the producer directory and the stream model are exported only to the modules of this project
 * that implement or inspect them; the producer and consumer engines and a batch's lease are not exported at all
 * (LayeringTest holds the rules).
 */
module io.tensorsocket.core {
    requires org.slf4j;
    requires jdk.net;

    exports io.tensorsocket;
    exports io.tensorsocket.source;
    exports io.tensorsocket.external;
    exports io.tensorsocket.spi to
            io.tensorsocket.flight,
            io.tensorsocket.cli;
    exports io.tensorsocket.protocol to
            io.tensorsocket.cli,
            io.tensorsocket.bench,
            io.tensorsocket.flight;
    exports io.tensorsocket.arena to
            io.tensorsocket.cli,
            io.tensorsocket.bench;
    exports io.tensorsocket.rings to
            io.tensorsocket.cli,
            io.tensorsocket.bench;
    exports io.tensorsocket.directory to
            io.tensorsocket.cli,
            io.tensorsocket.bench;
    exports io.tensorsocket.stream to
            io.tensorsocket.bench,
            io.tensorsocket.pipeline;

    uses RemoteConnector;
}
