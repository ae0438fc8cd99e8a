package io.tensorsocket.flight;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientStreamTracer;
import io.grpc.HasByteBuffer;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.auth2.Auth2Constants;
import org.apache.arrow.flight.grpc.StatusUtils;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The client end of one Flight {@code DoGet} call, reading each {@code FlightData} message straight into
 * a buffer of the allocator: the body is copied once, from gRPC's network buffers, and nothing else is
 * allocated per message.
 *
 * <p>Flight's own reader (Arrow 19) first reads every body into a new heap array of its size and copies
 * that into an Arrow buffer: for 38 MB batches a fresh, zeroed 38 MB array per message, which on this
 * kind of virtual machine costs far more than the transfer (first touch of fresh memory). This reader
 * speaks the same wire format, {@code FlightData} of Flight.proto, so any Flight server serves it:
 *
 * <pre>
 *  FlightData (protobuf)                     read here as
 *  ───────────────────────────────────────   ──────────────────────────────────────────────────
 *  1    flight_descriptor  message           skipped (DoGet answers never need it)
 *  2    data_header        bytes             {@link Frame#header()}: an Arrow IPC Message
 *                                            flatbuffer (Schema or RecordBatch), or absent
 *  3    app_metadata       bytes             {@link Frame#appMetadata()}, or absent
 *  1000 data_body          bytes             {@link Frame#body()}: one allocator buffer, filled
 *                                            from gRPC's buffers without an intermediate copy
 *  any other field                           skipped, as protobuf readers do
 * </pre>
 *
 * Messages are requested one at a time as they are taken (two ahead, so the next batch is on its way
 * while the current one is used), which bounds what a slow reader buffers.
 */
final class DoGetReader implements AutoCloseable {
    private static final int AHEAD = 2;
    private static final String DO_GET =
            MethodDescriptor.generateFullMethodName("arrow.flight.protocol.FlightService", "DoGet");

    /** One received {@code FlightData}; whoever takes it owns {@code body} and closes it. */
    record Frame(byte[] header, byte[] appMetadata, ArrowBuf body) {
        void release() {
            if (body != null) {
                body.close();
            }
        }
    }

    private record End(Status status, Metadata trailers) {}

    private final ClientCall<byte[], Frame> call;
    private final LinkedBlockingQueue<Object> received = new LinkedBlockingQueue<>();
    private volatile boolean closed;
    private volatile boolean trailersArrived;
    private volatile Consumer<Status> onEnd = s -> {};

    /**
     * Starts {@code DoGet(ticket)} on {@code channel}; bodies go into buffers of {@code allocator}.
     *
     * @param bearerToken sent as {@code Authorization: Bearer <token>}, or null for none
     */
    DoGetReader(Channel channel, BufferAllocator allocator, byte[] ticket, String bearerToken) {
        MethodDescriptor<byte[], Frame> method = MethodDescriptor.<byte[], Frame>newBuilder()
                .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
                .setFullMethodName(DO_GET)
                .setRequestMarshaller(new TicketMarshaller())
                .setResponseMarshaller(new FrameMarshaller(allocator))
                .build();
        ClientStreamTracer.Factory tracing = new ClientStreamTracer.Factory() {
            @Override
            public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
                return new ClientStreamTracer() {
                    @Override
                    public void inboundTrailers(Metadata trailers) {
                        trailersArrived = true;
                    }
                };
            }
        };
        this.call = channel.newCall(method, CallOptions.DEFAULT.withStreamTracerFactory(tracing));
        Metadata headers = new Metadata();
        if (bearerToken != null) {
            headers.put(
                    Metadata.Key.of(Auth2Constants.AUTHORIZATION_HEADER, Metadata.ASCII_STRING_MARSHALLER),
                    Auth2Constants.BEARER_PREFIX + bearerToken);
        }
        call.start(
                new ClientCall.Listener<>() {
                    @Override
                    public void onMessage(Frame frame) {
                        if (closed) {
                            frame.release();
                        } else {
                            received.add(frame);
                        }
                    }

                    @Override
                    public void onClose(Status status, Metadata trailers) {
                        received.add(new End(status, trailers));
                        onEnd.accept(status);
                    }
                },
                headers);
        call.sendMessage(ticket);
        call.halfClose();
        call.request(AHEAD);
    }

    /**
     * The next message, or null once the server has completed the stream. Blocks until one arrives or the
     * call ends; {@link #cancel} ends a wait from another thread.
     *
     * @throws FlightRuntimeException when the call failed or was cancelled
     */
    Frame next() {
        Object o;
        try {
            o = received.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.cancel("the reading thread was interrupted", e);
            throw CallStatus.CANCELLED.withDescription("interrupted").toRuntimeException();
        }
        if (o instanceof Frame f) {
            call.request(1);
            return f;
        }
        End end = (End) o;
        received.add(end); // every later call sees the end too
        if (end.status().isOk()) {
            return null;
        }
        throw StatusUtils.fromGrpcStatusAndTrailers(end.status(), end.trailers())
                .toRuntimeException();
    }

    /**
     * Runs {@code action} on gRPC's thread when the call ends (at once if it has), before the messages queued
     * ahead of that end are taken: a reader that is not reading learns of it anyway.
     */
    void onEnd(Consumer<Status> action) {
        onEnd = action;
        for (Object o : received) {
            if (o instanceof End e) {
                action.accept(e.status());
            }
        }
    }

    /**
     * Whether the server has ended the call (its trailers arrived), even if messages queued ahead of that end
     * are still to be taken: a connection lost after that loses nothing.
     */
    boolean endedByServer() {
        return trailersArrived;
    }

    /** Ends the call from any thread; a waiting {@link #next()} throws CANCELLED. */
    void cancel(String why) {
        call.cancel(why, null);
    }

    /** Cancels the call if it is still open and frees every message not taken. */
    @Override
    public void close() {
        closed = true;
        call.cancel("the consumer closed", null);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        // gRPC always ends a cancelled call with onClose; messages parsed until then are released here
        while (System.nanoTime() < deadline) {
            Object o;
            try {
                o = received.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (o instanceof Frame f) {
                f.release();
            } else if (o instanceof End) {
                received.clear();
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ wire

    /** {@code Ticket { bytes ticket = 1; }}. */
    private static final class TicketMarshaller implements MethodDescriptor.Marshaller<byte[]> {
        @Override
        public InputStream stream(byte[] ticket) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(ticket.length + 6);
            out.write(0x0A); // field 1, length-delimited
            writeVarint(out, ticket.length);
            out.writeBytes(ticket);
            return new ByteArrayInputStream(out.toByteArray());
        }

        @Override
        public byte[] parse(InputStream stream) {
            throw new UnsupportedOperationException("a client never receives a ticket");
        }

        private static void writeVarint(ByteArrayOutputStream out, int v) {
            while ((v & ~0x7F) != 0) {
                out.write((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            out.write(v);
        }
    }

    /** Parses {@code FlightData} as laid out in the class comment. */
    static final class FrameMarshaller implements MethodDescriptor.Marshaller<Frame> {
        private static final int WIRE_VARINT = 0;
        private static final int WIRE_FIXED64 = 1;
        private static final int WIRE_BYTES = 2;
        private static final int WIRE_FIXED32 = 5;
        private final BufferAllocator allocator;

        FrameMarshaller(BufferAllocator allocator) {
            this.allocator = allocator;
        }

        @Override
        public InputStream stream(Frame value) {
            throw new UnsupportedOperationException("a client never sends FlightData on DoGet");
        }

        @Override
        public Frame parse(InputStream in) {
            byte[] header = null;
            byte[] metadata = null;
            ArrowBuf body = null;
            try (in) {
                long tag;
                while ((tag = readVarint(in, true)) >= 0) {
                    int field = (int) (tag >>> 3);
                    int wire = (int) (tag & 7);
                    if (wire == WIRE_BYTES) {
                        long length = readVarint(in, false);
                        switch (field) {
                            case 2 -> header = readBytes(in, length);
                            case 3 -> metadata = readBytes(in, length);
                            case 1000 -> {
                                if (body != null) {
                                    body.close();
                                }
                                body = readBody(in, length);
                            }
                            default -> skip(in, length);
                        }
                    } else {
                        skipScalar(in, wire);
                    }
                }
                return new Frame(header, metadata, body);
            } catch (IOException | RuntimeException e) {
                if (body != null) {
                    body.close();
                }
                // gRPC turns a parse failure into an INTERNAL status on the call, which the reader reports
                throw Status.INTERNAL
                        .withDescription("malformed FlightData from the server: " + e.getMessage())
                        .withCause(e)
                        .asRuntimeException();
            }
        }

        private ArrowBuf readBody(InputStream in, long length) throws IOException {
            ArrowBuf buf = allocator.buffer(Math.max(length, 1));
            try {
                MemorySegment dest =
                        MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(length);
                long done = 0;
                HasByteBuffer direct = in instanceof HasByteBuffer h && h.byteBufferSupported() ? h : null;
                byte[] chunk = direct == null ? new byte[64 << 10] : null;
                while (done < length) {
                    int n;
                    if (direct != null) {
                        ByteBuffer bb = direct.getByteBuffer();
                        if (bb == null) {
                            throw new EOFException("the message ends " + (length - done) + " bytes into its body");
                        }
                        n = (int) Math.min(bb.remaining(), length - done);
                        MemorySegment.copy(MemorySegment.ofBuffer(bb), 0, dest, done, n);
                        if (in.skip(n) != n) {
                            throw new EOFException("the message ends inside its body");
                        }
                    } else {
                        n = in.read(chunk, 0, (int) Math.min(chunk.length, length - done));
                        if (n < 0) {
                            throw new EOFException("the message ends " + (length - done) + " bytes into its body");
                        }
                        MemorySegment.copy(MemorySegment.ofArray(chunk), 0, dest, done, n);
                    }
                    done += n;
                }
                buf.writerIndex(length);
                return buf;
            } catch (IOException | RuntimeException e) {
                buf.close();
                throw e;
            }
        }

        private static byte[] readBytes(InputStream in, long length) throws IOException {
            if (length > 64 << 20) {
                throw new IOException("a header or metadata field of " + length + " bytes");
            }
            byte[] b = in.readNBytes((int) length);
            if (b.length != length) {
                throw new EOFException("the message ends inside a field");
            }
            return b;
        }

        private static void skip(InputStream in, long length) throws IOException {
            in.skipNBytes(length);
        }

        private static void skipScalar(InputStream in, int wire) throws IOException {
            switch (wire) {
                case WIRE_VARINT -> readVarint(in, false);
                case WIRE_FIXED64 -> in.skipNBytes(8);
                case WIRE_FIXED32 -> in.skipNBytes(4);
                default -> throw new IOException("protobuf wire type " + wire + " is not one FlightData uses");
            }
        }

        /** A protobuf varint; -1 at a clean end of the message when {@code endAllowed}. */
        private static long readVarint(InputStream in, boolean endAllowed) throws IOException {
            long v = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                int b = in.read();
                if (b < 0) {
                    if (shift == 0 && endAllowed) {
                        return -1;
                    }
                    throw new EOFException("the message ends inside a varint");
                }
                v |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    return v;
                }
            }
            throw new IOException("a varint longer than 10 bytes");
        }
    }
}
