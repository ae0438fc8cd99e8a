package io.tensorsocket.flight;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The DoGet reader against Arrow Flight's own server, and against malformed messages. */
@Timeout(60)
class DoGetReaderTest {
    private static final Schema SCHEMA = new Schema(List.of(
            new Field("x", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null)));
    private static final int ROWS = 3_000_000; // 12 MB bodies: many network buffers per message

    /** Streams three batches, each tagged with its number as app metadata, then fails on "fail". */
    private static final class Producer extends NoOpFlightProducer {
        private final BufferAllocator allocator;

        Producer(BufferAllocator allocator) {
            this.allocator = allocator;
        }

        @Override
        public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            if (new String(ticket.getBytes(), StandardCharsets.UTF_8).equals("fail")) {
                listener.error(
                        CallStatus.NOT_FOUND.withDescription("no such stream").toRuntimeException());
                return;
            }
            try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
                listener.start(root);
                Float4Vector x = (Float4Vector) root.getVector(0);
                for (int batch = 0; batch < 3; batch++) {
                    x.allocateNew(ROWS);
                    for (int i = 0; i < ROWS; i++) {
                        x.set(i, batch * 10_000_000f + i);
                    }
                    root.setRowCount(ROWS);
                    ArrowBuf tag = allocator.buffer(1);
                    tag.setByte(0, batch);
                    tag.writerIndex(1);
                    listener.putNext(tag);
                }
                listener.completed();
            }
        }
    }

    @Test
    void readsFlightsOwnStreamExactlyAndEndsWithNull() throws Exception {
        try (BufferAllocator serverAlloc = new RootAllocator();
                FlightServer server = FlightServer.builder(
                                serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), new Producer(serverAlloc))
                        .build()
                        .start();
                RecyclingAllocations recycling = new RecyclingAllocations(64L << 20);
                BufferAllocator alloc = RecyclingAllocations.rootAllocator(recycling)) {
            ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
                    .usePlaintext()
                    .maxInboundMessageSize(Integer.MAX_VALUE)
                    .build();
            try (DoGetReader reader = new DoGetReader(channel, alloc, "all".getBytes(StandardCharsets.UTF_8), null);
                    VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, alloc)) {
                DoGetReader.Frame first = reader.next();
                first.release();
                Message schema = Message.getRootAsMessage(ByteBuffer.wrap(first.header()));
                assertEquals(MessageHeader.Schema, schema.headerType());
                assertEquals(SCHEMA, MessageSerializer.deserializeSchema(schema));
                VectorLoader loader = new VectorLoader(root);
                for (int batch = 0; batch < 3; batch++) {
                    DoGetReader.Frame f = reader.next();
                    assertArrayEquals(new byte[] {(byte) batch}, f.appMetadata());
                    Message m = Message.getRootAsMessage(ByteBuffer.wrap(f.header()));
                    assertEquals(MessageHeader.RecordBatch, m.headerType());
                    try (ArrowRecordBatch arb = MessageSerializer.deserializeRecordBatch(m, f.body())) {
                        loader.load(arb);
                    }
                    Float4Vector x = (Float4Vector) root.getVector(0);
                    assertEquals(ROWS, root.getRowCount());
                    for (int i = 0; i < ROWS; i += 997) {
                        assertEquals(batch * 10_000_000f + i, x.get(i), "row " + i + " of batch " + batch);
                    }
                    assertEquals(batch * 10_000_000f + ROWS - 1, x.get(ROWS - 1));
                }
                assertNull(reader.next(), "the server completed the stream");
                assertNull(reader.next(), "and stays completed");
                root.clear();
                assertEquals(0, alloc.getAllocatedMemory(), "every body was released");
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aFailedCallIsAFlightErrorWithTheServersStatus() throws Exception {
        try (BufferAllocator serverAlloc = new RootAllocator();
                FlightServer server = FlightServer.builder(
                                serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), new Producer(serverAlloc))
                        .build()
                        .start();
                BufferAllocator alloc = new RootAllocator()) {
            ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort())
                    .usePlaintext()
                    .build();
            try (DoGetReader reader = new DoGetReader(channel, alloc, "fail".getBytes(StandardCharsets.UTF_8), null)) {
                FlightRuntimeException e = assertThrows(FlightRuntimeException.class, reader::next);
                assertEquals(FlightStatusCode.NOT_FOUND, e.status().code());
                assertEquals("no such stream", e.status().description());
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ parsing

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) (v & 0x7F) | 0x80);
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static void bytesField(ByteArrayOutputStream out, int field, byte[] value) {
        varint(out, (long) field << 3 | 2);
        varint(out, value.length);
        out.writeBytes(value);
    }

    @Test
    void parsesEveryFieldAndSkipsUnknownOnes() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        bytesField(out, 1, new byte[] {9, 9, 9}); // a descriptor: skipped
        varint(out, 7L << 3); // an unknown varint field
        varint(out, 300);
        bytesField(out, 2, new byte[] {1, 2});
        bytesField(out, 3, new byte[] {3});
        bytesField(out, 1000, new byte[] {4, 5, 6, 7});
        try (BufferAllocator alloc = new RootAllocator()) {
            DoGetReader.Frame f =
                    new DoGetReader.FrameMarshaller(alloc).parse(new ByteArrayInputStream(out.toByteArray()));
            assertArrayEquals(new byte[] {1, 2}, f.header());
            assertArrayEquals(new byte[] {3}, f.appMetadata());
            assertEquals(4, f.body().readableBytes());
            assertEquals(7, f.body().getByte(3));
            f.release();
        }
    }

    @Test
    void aTruncatedOrMalformedMessageIsAnInternalErrorAndLeaksNothing() {
        ByteArrayOutputStream truncated = new ByteArrayOutputStream();
        varint(truncated, 1000L << 3 | 2);
        varint(truncated, 1 << 20);
        truncated.writeBytes(new byte[1000]);
        ByteArrayOutputStream badWire = new ByteArrayOutputStream();
        varint(badWire, 2L << 3 | 3); // group start: not in FlightData
        for (byte[] bytes : List.of(truncated.toByteArray(), badWire.toByteArray(), new byte[] {(byte) 0x80})) {
            try (BufferAllocator alloc = new RootAllocator()) {
                StatusRuntimeException e = assertThrows(
                        StatusRuntimeException.class,
                        () -> new DoGetReader.FrameMarshaller(alloc).parse(new ByteArrayInputStream(bytes)));
                assertEquals(Code.INTERNAL, e.getStatus().getCode());
                assertTrue(e.getStatus().getDescription().startsWith("malformed FlightData"), e.getMessage());
                assertEquals(0, alloc.getAllocatedMemory());
            }
        }
    }
}
