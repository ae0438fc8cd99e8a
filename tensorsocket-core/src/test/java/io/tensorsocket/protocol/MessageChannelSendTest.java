package io.tensorsocket.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sends on a non-blocking connection whose peer stops reading: they wait out a full socket buffer while the peer
 * drains it, and fail with a specific error, within their bound, when it reads nothing.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MessageChannelSendTest {

    @Test
    void aSendToAPeerThatReadsNothingFailsWithinItsBoundSayingWhy() throws Exception {
        withPair((sender, peer) -> {
            MessageChannel out = new MessageChannel(sender, Duration.ofMillis(400));
            long sent = 0;
            long started = System.nanoTime();
            IOException e;
            while (true) {
                try {
                    long t = System.nanoTime();
                    out.send(new Message.Release(sent));
                    sent++;
                    assertTrue(System.nanoTime() - t < Duration.ofSeconds(5).toNanos(), "a send hung");
                } catch (IOException thrown) {
                    e = thrown;
                    break;
                }
                assertTrue(System.nanoTime() - started < Duration.ofSeconds(60).toNanos(), "no send failed");
            }
            assertTrue(sent > 100, "the socket buffer held only " + sent + " frames");
            assertTrue(e.getMessage().contains("read nothing of this connection for 400 ms"), e.getMessage());
            assertTrue(e.getMessage().contains("stopped or stuck"), e.getMessage());
        });
    }

    @Test
    void aSendWaitsForAPeerThatDrainsItsBufferLaterThanASpinWouldLast() throws Exception {
        withPair((sender, peer) -> {
            MessageChannel out = new MessageChannel(sender, Duration.ofSeconds(5));
            long filled = 0;
            // fill the buffer: a frame that does not fit at once is sent once the peer reads
            while (fits(out, filled)) {
                filled++;
            }
            long frames = filled;
            AtomicLong read = new AtomicLong();
            Thread reader = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(300);
                    MessageChannel in = new MessageChannel(peer);
                    for (long i = 0; i <= frames; i++) {
                        assertEquals(new Message.Release(i), in.read());
                        read.incrementAndGet();
                    }
                } catch (Exception ex) {
                    throw new AssertionError(ex);
                }
            });
            long t = System.nanoTime();
            out.send(new Message.Release(frames));
            assertTrue(System.nanoTime() - t > Duration.ofMillis(200).toNanos(), "the buffer was not full");
            reader.join(10_000);
            assertEquals(frames + 1, read.get());
        });
    }

    /** Sends frame {@code seq} if it fits the socket buffer now (a probe write of its bytes), else returns false. */
    private static boolean fits(MessageChannel out, long seq) throws IOException {
        ByteBuffer frame = ByteBuffer.allocate(WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD)
                .order(ByteOrder.LITTLE_ENDIAN);
        WireFormat.encode(new Message.Release(seq), frame);
        frame.flip();
        int n = out.channel().write(frame);
        assertTrue(n == 0 || !frame.hasRemaining(), "a small frame was written in part: " + n + " bytes");
        return n > 0;
    }

    private interface PairUse {
        void use(SocketChannel sender, SocketChannel peer) throws Exception;
    }

    private static void withPair(PairUse use) throws Exception {
        Path dir = Files.createTempDirectory("tensorsocket-send-");
        Path sock = dir.resolve("s.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(sock));
            try (SocketChannel sender = SocketChannel.open(server.getLocalAddress());
                    SocketChannel peer = server.accept()) {
                sender.configureBlocking(false);
                use.use(sender, peer);
            }
        } finally {
            Files.deleteIfExists(sock);
            Files.deleteIfExists(dir);
        }
    }
}
