package io.tensorsocket.flight;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.DType;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSpec;
import java.util.List;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A remote consumer pointed at a Flight server that does not speak TensorSocket's stream gets a protocol error. */
@Timeout(60)
class ForeignServerTest {
    /** What the server does is named by the producer name in the ticket. */
    private static final class Producer extends NoOpFlightProducer {
        private final BufferAllocator allocator;

        Producer(BufferAllocator allocator) {
            this.allocator = allocator;
        }

        @Override
        public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            String name = StreamRequest.parse(ticket.getBytes()).name();
            switch (name) {
                case "empty" -> listener.completed();
                case "foreign" -> {
                    Schema plain = new Schema(List.of(new Field(
                            "x",
                            FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)),
                            null)));
                    try (VectorSchemaRoot root = VectorSchemaRoot.create(plain, allocator)) {
                        listener.start(root);
                        listener.completed();
                    }
                }
                default -> { // a TensorSocket schema, then a batch tag on a message that carries no record batch
                    StreamHeader h = new StreamHeader(
                            10, 5, false, 5, StartMode.EPOCH_START, 0, 0, 1, "test", StartMode.ROLLING, -1);
                    Schema schema = TensorColumns.schema(List.of(TensorSpec.of("x", DType.FLOAT32)), h.toMetadata());
                    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
                        listener.start(root);
                        ArrowBuf tag = new RecordTag(RecordTag.Kind.BATCH, 0, 0, 0, 0, 5).encode(allocator);
                        listener.putMetadata(tag);
                        listener.completed();
                    }
                }
            }
        }
    }

    private static void assertRefused(int port, String name, String expected) {
        ProtocolException e = assertThrows(ProtocolException.class, () -> {
            try (RemoteConsumer c = RemoteConsumer.connect(
                    "grpc://127.0.0.1:" + port + "/" + name, ConsumerOptions.batchSize(5), RemoteOptions.defaults())) {
                for (Batch b : c) {
                    b.close();
                }
            }
        });
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void aServerThatIsNotTensorSocketIsAProtocolErrorThatSaysSo() throws Exception {
        try (BufferAllocator alloc = new RootAllocator();
                FlightServer server = FlightServer.builder(
                                alloc, Location.forGrpcInsecure("127.0.0.1", 0), new Producer(alloc))
                        .build()
                        .start()) {
            int port = server.getPort();
            assertRefused(port, "empty", "ended the stream before sending its schema");
            assertRefused(
                    port,
                    "foreign",
                    "is not a TensorSocket server: the stream's schema carries no TensorSocket version 1 header");
            assertRefused(port, "tagless", "sent a batch tag on a message without a record batch");
        }
    }
}
