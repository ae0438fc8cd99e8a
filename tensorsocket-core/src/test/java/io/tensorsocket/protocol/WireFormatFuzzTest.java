package io.tensorsocket.protocol;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import java.io.EOFException;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Property-based fuzzing of the control protocol's decoders: random, truncated, oversized and mutated
 * frames are either decoded or rejected with {@link ProtocolException} / {@link ProtocolVersionException};
 * no other exception escapes, and no length field makes a decoder allocate what it claims.
 */
class WireFormatFuzzTest {
    private static Path dir;
    private static ServerSocketChannel server;

    @BeforeContainer
    static void openSocket() throws IOException {
        dir = Files.createTempDirectory("tensorsocket-fuzz-");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(dir.resolve("fuzz.sock")));
    }

    @AfterContainer
    static void closeSocket() throws IOException {
        server.close();
        Files.deleteIfExists(dir.resolve("fuzz.sock"));
        Files.deleteIfExists(dir);
    }

    // ------------------------------------------------------------------------------------------ generators

    @Provide
    Arbitrary<Message> messages() {
        return Arbitraries.of(WireFormatTest.ALL);
    }

    /** A valid frame with some bytes overwritten by random values. */
    @Provide
    Arbitrary<byte[]> mutatedFrames() {
        Arbitrary<Integer> positions = Arbitraries.integers().between(0, 400);
        Arbitrary<Byte> values = Arbitraries.bytes();
        return Combinators.combine(messages(), Combinators.combine(positions, values).as((p, v) -> new int[]{p, v}).list().ofMinSize(1).ofMaxSize(8))
                .as((m, edits) -> {
                    byte[] frame = frame(m);
                    for (int[] e : edits) {
                        frame[e[0] % frame.length] = (byte) e[1];
                    }
                    return frame;
                });
    }

    static byte[] frame(Message m) {
        ByteBuffer b = WireFormat.encode(m);
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    // ------------------------------------------------------------------------------------------ decoders alone

    @Property(tries = 2000)
    void anyTwelveBytesAreAValidHeaderOrAProtocolException(@ForAll @Size(12) byte[] header) {
        try {
            WireFormat.Header h = WireFormat.decodeHeader(ByteBuffer.wrap(header));
            assertTrue(h.payloadBytes() >= 0 && h.payloadBytes() <= WireFormat.MAX_PAYLOAD, h.toString());
        } catch (ProtocolException expected) {
            assertTrue(expected.getMessage() != null && !expected.getMessage().isBlank());
        }
    }

    @Property(tries = 2000)
    void anyPayloadOfAnyTypeDecodesOrIsAProtocolException(@ForAll @IntRange(min = 0, max = 12) int type,
                                                          @ForAll @Size(max = 600) byte[] payload) {
        decodeOrReject(type, payload);
    }

    @Property(tries = 1000)
    void everyTruncationAndExtensionOfAValidPayloadIsRejected(@ForAll("messages") Message m,
                                                              @ForAll @IntRange(min = -64, max = 64) int delta) {
        byte[] frame = frame(m);
        ByteBuffer hb = ByteBuffer.wrap(frame);
        WireFormat.Header h = WireFormat.decodeHeader(hb);
        int length = Math.max(0, h.payloadBytes() + delta);
        byte[] payload = Arrays.copyOfRange(frame, WireFormat.HEADER_BYTES, WireFormat.HEADER_BYTES + length);
        if (length == h.payloadBytes()) {
            assertEquals(m.toString(), WireFormat.decodePayload(h.type(), ByteBuffer.wrap(payload)).toString());
        } else {
            try {
                WireFormat.decodePayload(h.type(), ByteBuffer.wrap(payload));
                fail("a payload of " + length + " bytes instead of " + h.payloadBytes() + " decoded for " + m);
            } catch (ProtocolException expected) {
                // the only acceptable outcome
            }
        }
    }

    @Property(tries = 2000)
    void mutatedPayloadsDecodeOrAreAProtocolException(@ForAll("mutatedFrames") byte[] frame) {
        ByteBuffer b = ByteBuffer.wrap(frame);
        WireFormat.Header h;
        try {
            h = WireFormat.decodeHeader(b);
        } catch (ProtocolException e) {
            return;
        }
        byte[] payload = Arrays.copyOfRange(frame, WireFormat.HEADER_BYTES, frame.length);
        decodeOrReject(h.type(), payload);
    }

    @Property(tries = 500)
    void lengthFieldsNeverDriveAllocation(@ForAll @IntRange(min = 1, max = 8) int type,
                                          @ForAll @IntRange(min = 0, max = 64) int offset,
                                          @ForAll @Size(max = 96) byte[] payload) {
        // Every u16 / u32 slot of the payload claims its maximum: strings of 65535 bytes, 65535 tensors.
        byte[] p = Arrays.copyOf(payload, Math.max(payload.length, offset + 4));
        p[offset] = p[offset + 1] = p[offset + 2] = p[offset + 3] = (byte) 0xff;
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        decodeOrReject(type, p); // first call: class loading and lazy initialisation are not what is measured
        long before = mx.getCurrentThreadAllocatedBytes();
        decodeOrReject(type, p);
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        // An unbounded decoder would allocate 64 KiB for a string or 256 KiB for a tensor list here.
        assertTrue(allocated < 48 * 1024, "decoding " + p.length + " bytes allocated " + allocated + " bytes");
    }

    @Property(tries = 200)
    void aHeaderClaimingMoreThanTheLimitIsRefusedBeforeAnyPayloadIsRead(
            @ForAll @IntRange(min = WireFormat.MAX_PAYLOAD + 1) int claimed) {
        ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(WireFormat.MAGIC).putShort((short) WireFormat.VERSION).put((byte) 1).put((byte) 0).putInt(claimed).flip();
        try {
            WireFormat.decodeHeader(b);
            fail("a payload of " + claimed + " bytes was accepted");
        } catch (ProtocolException e) {
            assertTrue(e.getMessage().contains("limit"), e.getMessage());
        }
    }

    private static void decodeOrReject(int type, byte[] payload) {
        try {
            WireFormat.decodePayload(type, ByteBuffer.wrap(payload));
        } catch (ProtocolException expected) {
            assertTrue(expected.getMessage() != null && !expected.getMessage().isBlank());
        } catch (RuntimeException e) {
            throw new AssertionError("type " + type + ", payload " + Arrays.toString(payload) + " escaped as " + e, e);
        }
    }

    // ------------------------------------------------------------------------------------------ through a socket

    /**
     * Bytes arriving on a real connection, then EOF: the channel yields whole messages, then null (EOF
     * between frames) or EOFException (EOF mid-frame), or a protocol error; nothing else.
     */
    @Property(tries = 300)
    void aChannelFedAnyBytesYieldsMessagesOrASpecificError(@ForAll("streams") byte[] bytes) throws Exception {
        try (SocketChannel writer = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            writer.connect(server.getLocalAddress());
            try (SocketChannel accepted = server.accept()) {
                writer.write(ByteBuffer.wrap(bytes));
                writer.shutdownOutput();
                MessageChannel in = new MessageChannel(accepted);
                for (int i = 0; i < 64; i++) {
                    Message m;
                    try {
                        m = in.read();
                    } catch (ProtocolException | ProtocolVersionException | EOFException expected) {
                        return;
                    } catch (RuntimeException | IOException e) {
                        throw new AssertionError("stream " + Arrays.toString(bytes) + " escaped as " + e, e);
                    }
                    if (m == null) {
                        return;
                    }
                }
                fail("more than 64 messages from " + bytes.length + " bytes");
            }
        }
    }

    /** Concatenations of valid, mutated, truncated and random frames. */
    @Provide
    Arbitrary<byte[]> streams() {
        Arbitrary<byte[]> valid = messages().map(WireFormatFuzzTest::frame);
        Arbitrary<byte[]> truncated = Combinators.combine(valid, Arbitraries.integers().between(1, 200))
                .as((f, n) -> Arrays.copyOf(f, Math.max(1, f.length - n)));
        Arbitrary<byte[]> random = Arbitraries.bytes().array(byte[].class).ofMaxSize(64);
        Arbitrary<byte[]> part = Arbitraries.oneOf(valid, mutatedFrames(), truncated, random);
        return part.list().ofMinSize(1).ofMaxSize(4).map(WireFormatFuzzTest::concat);
    }

    private static byte[] concat(List<byte[]> parts) {
        int n = parts.stream().mapToInt(p -> p.length).sum();
        ByteBuffer b = ByteBuffer.allocate(n);
        parts.forEach(b::put);
        return b.array();
    }
}
