package io.tensorsocket.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.management.ThreadMXBean;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.testing.RandomTrials;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Property-based fuzzing of the control protocol's decoders: random, truncated, oversized and mutated
 * frames are either decoded or rejected with {@link ProtocolException} / {@link ProtocolVersionException};
 * no other exception escapes, and no length field makes a decoder allocate what it claims. Cases are
 * drawn at random, reproducibly (see {@link RandomTrials}).
 */
class WireFormatFuzzTest {
    private static Path dir;
    private static ServerSocketChannel server;

    @BeforeAll
    static void openSocket() throws IOException {
        dir = Files.createTempDirectory("tensorsocket-fuzz-");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(dir.resolve("fuzz.sock")));
    }

    @AfterAll
    static void closeSocket() throws IOException {
        server.close();
        Files.deleteIfExists(dir.resolve("fuzz.sock"));
        Files.deleteIfExists(dir);
    }

    // ------------------------------------------------------------------------------------------ generators

    private static Message message(SplittableRandom r) {
        return WireFormatTest.ALL.get(r.nextInt(WireFormatTest.ALL.size()));
    }

    /** A valid frame with one to eight bytes overwritten by random values. */
    private static byte[] mutatedFrame(SplittableRandom r) {
        byte[] frame = frame(message(r));
        for (int edits = r.nextInt(1, 9); edits > 0; edits--) {
            frame[r.nextInt(0, 401) % frame.length] = (byte) r.nextInt(256);
        }
        return frame;
    }

    /** Up to {@code max} random bytes, empty and full length included more often than by chance. */
    private static byte[] someBytes(SplittableRandom r, int max) {
        int n = switch (r.nextInt(10)) {
            case 0 -> 0;
            case 1 -> max;
            default -> r.nextInt(max + 1);
        };
        return RandomTrials.bytes(r, n);
    }

    static byte[] frame(Message m) {
        ByteBuffer b = WireFormat.encode(m);
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    // ------------------------------------------------------------------------------------------ decoders alone

    @Test
    void anyTwelveBytesAreAValidHeaderOrAProtocolException() {
        RandomTrials.run(2000, 0xf022_0001L, r -> headerOrReject(RandomTrials.bytes(r, 12)));
    }

    private static void headerOrReject(byte[] header) {
        try {
            WireFormat.Header h = WireFormat.decodeHeader(ByteBuffer.wrap(header));
            assertTrue(h.payloadBytes() >= 0 && h.payloadBytes() <= WireFormat.MAX_PAYLOAD, h.toString());
        } catch (ProtocolException expected) {
            assertTrue(expected.getMessage() != null && !expected.getMessage().isBlank());
        }
    }

    @Test
    void anyPayloadOfAnyTypeDecodesOrIsAProtocolException() {
        RandomTrials.run(2000, 0xf022_0002L, r -> decodeOrReject(r.nextInt(0, 13), someBytes(r, 600)));
    }

    @Test
    void everyTruncationAndExtensionOfAValidPayloadIsRejected() {
        RandomTrials.run(1000, 0xf022_0003L, r -> truncatedOrExtended(message(r), r.nextInt(-64, 65)));
    }

    private static void truncatedOrExtended(Message m, int delta) {
        byte[] frame = frame(m);
        ByteBuffer hb = ByteBuffer.wrap(frame);
        WireFormat.Header h = WireFormat.decodeHeader(hb);
        int length = Math.max(0, h.payloadBytes() + delta);
        byte[] payload = Arrays.copyOfRange(frame, WireFormat.HEADER_BYTES, WireFormat.HEADER_BYTES + length);
        if (length == h.payloadBytes()) {
            assertEquals(
                    m.toString(),
                    WireFormat.decodePayload(h.type(), ByteBuffer.wrap(payload)).toString());
        } else {
            try {
                WireFormat.decodePayload(h.type(), ByteBuffer.wrap(payload));
                fail("a payload of " + length + " bytes instead of " + h.payloadBytes() + " decoded for " + m);
            } catch (ProtocolException expected) {
                // the only acceptable outcome
            }
        }
    }

    @Test
    void mutatedPayloadsDecodeOrAreAProtocolException() {
        RandomTrials.run(2000, 0xf022_0004L, r -> mutatedDecodesOrRejects(mutatedFrame(r)));
    }

    private static void mutatedDecodesOrRejects(byte[] frame) {
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

    @Test
    void lengthFieldsNeverDriveAllocation() {
        RandomTrials.run(
                500, 0xf022_0005L, r -> boundedAllocation(r.nextInt(1, 9), r.nextInt(0, 65), someBytes(r, 96)));
    }

    private static void boundedAllocation(int type, int offset, byte[] payload) {
        // Every u16 / u32 slot of the payload claims its maximum: strings of 65535 bytes, 65535 tensors.
        byte[] p = Arrays.copyOf(payload, Math.max(payload.length, offset + 4));
        p[offset] = p[offset + 1] = p[offset + 2] = p[offset + 3] = (byte) 0xff;
        ThreadMXBean mx = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        decodeOrReject(type, p); // first call: class loading and lazy initialisation are not what is measured
        long before = mx.getCurrentThreadAllocatedBytes();
        decodeOrReject(type, p);
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        // An unbounded decoder would allocate 64 KiB for a string or 256 KiB for a tensor list here.
        assertTrue(allocated < 48 * 1024, "decoding " + p.length + " bytes allocated " + allocated + " bytes");
    }

    @Test
    void aHeaderClaimingMoreThanTheLimitIsRefusedBeforeAnyPayloadIsRead() {
        RandomTrials.run(
                200,
                0xf022_0006L,
                r -> oversizedRefused(
                        r.nextInt(10) == 0
                                ? WireFormat.MAX_PAYLOAD + 1
                                : r.nextInt(WireFormat.MAX_PAYLOAD + 1, Integer.MAX_VALUE)));
    }

    private static void oversizedRefused(int claimed) {
        ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(WireFormat.MAGIC)
                .putShort((short) WireFormat.VERSION)
                .put((byte) 1)
                .put((byte) 0)
                .putInt(claimed)
                .flip();
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
    @Test
    void aChannelFedAnyBytesYieldsMessagesOrASpecificError() {
        RandomTrials.run(300, 0xf022_0007L, r -> {
            try {
                channelYieldsMessagesOrError(stream(r));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    private static void channelYieldsMessagesOrError(byte[] bytes) throws IOException {
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

    /** Concatenations of one to four valid, mutated, truncated and random frames. */
    private static byte[] stream(SplittableRandom r) {
        List<byte[]> parts = new ArrayList<>();
        for (int n = r.nextInt(1, 5); n > 0; n--) {
            parts.add(
                    switch (r.nextInt(4)) {
                        case 0 -> frame(message(r));
                        case 1 -> mutatedFrame(r);
                        case 2 -> {
                            byte[] f = frame(message(r));
                            yield Arrays.copyOf(f, Math.max(1, f.length - r.nextInt(1, 201)));
                        }
                        default -> someBytes(r, 64);
                    });
        }
        return concat(parts);
    }

    private static byte[] concat(List<byte[]> parts) {
        int n = parts.stream().mapToInt(p -> p.length).sum();
        ByteBuffer b = ByteBuffer.allocate(n);
        parts.forEach(b::put);
        return b.array();
    }
}
