package io.tensorsocket.protocol;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A control connection that reads and writes whole frames ({@link WireFormat}). One thread at a time
 * reads; any thread may send, one frame at a time.
 *
 * <p>On a blocking channel, {@link #read()} waits for the next frame. On a non-blocking one (a consumer
 * waits for readiness itself, see {@code ConsumerLink}), {@link #readAvailable()} takes what the socket
 * holds and returns a frame once one is complete.
 */
public final class MessageChannel implements AutoCloseable {
    private final SocketChannel channel;
    private final ByteBuffer in = ByteBuffer.allocate(WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD)
            .order(ByteOrder.LITTLE_ENDIAN);
    /** Room for two largest frames, so that small frames sent together fit one write. */
    private final ByteBuffer out = ByteBuffer.allocate(2 * (WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD))
            .order(ByteOrder.LITTLE_ENDIAN);
    /** Bytes read by {@link #readAvailable()} and not yet decoded, from index 0 to its position. */
    private ByteBuffer pending;

    private boolean peerClosed;
    /** How long a send waits for a peer that reads nothing while its socket buffer is full. */
    private final long writeStallNanos;

    /**
     * How long a send on a non-blocking channel waits for a peer that reads nothing of a full socket buffer before it
     * fails: the protocol bounds what a peer may leave unread (a batch notice per slot it holds, a few heartbeats), so a
     * full buffer that stays full means a stopped or stuck peer.
     */
    public static final Duration WRITE_STALL = Duration.ofSeconds(10);

    public MessageChannel(SocketChannel channel) {
        this(channel, WRITE_STALL);
    }

    MessageChannel(SocketChannel channel, Duration writeStall) {
        this.channel = channel;
        this.writeStallNanos = writeStall.toNanos();
    }

    public SocketChannel channel() {
        return channel;
    }

    /**
     * Reads the next message.
     *
     * @return the message, or null if the peer closed the connection between frames
     * @throws EOFException              if the peer closed it in the middle of a frame
     * @throws ProtocolException         if the bytes are not a valid frame
     * @throws ProtocolVersionException  if the frame is of another protocol version
     */
    public Message read() throws IOException {
        in.clear().limit(WireFormat.HEADER_BYTES);
        if (!fill(true)) {
            return null;
        }
        in.flip();
        WireFormat.Header h = WireFormat.decodeHeader(in);
        in.clear().limit(h.payloadBytes());
        fill(false);
        in.flip();
        if (h.version() != WireFormat.VERSION) {
            Message.Error e = WireFormat.decodeAnyVersionError(h.type(), in);
            if (e != null) {
                return e;
            }
            throw new ProtocolVersionException(
                    "the peer speaks control protocol version " + h.version() + " and this side version "
                            + WireFormat.VERSION + "; run the same TensorSocket release on both sides");
        }
        return WireFormat.decodePayload(h.type(), in);
    }

    private boolean fill(boolean eofAllowedAtStart) throws IOException {
        boolean first = true;
        while (in.hasRemaining()) {
            int n = channel.read(in);
            if (n < 0) {
                if (first && eofAllowedAtStart && in.position() == 0) {
                    return false;
                }
                throw new EOFException("connection closed in the middle of a frame");
            }
            first = false;
        }
        return true;
    }

    /**
     * For a non-blocking channel: reads what the socket holds and returns the next whole frame, or null if
     * none is complete yet (then see {@link #peerClosed()}).
     *
     * @throws EOFException              if the peer closed the connection in the middle of a frame
     * @throws ProtocolException         if the bytes are not a valid frame
     * @throws ProtocolVersionException  if the frame is of another protocol version
     */
    public Message readAvailable() throws IOException {
        if (pending == null) {
            pending = ByteBuffer.allocate(WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD)
                    .order(ByteOrder.LITTLE_ENDIAN);
        }
        while (true) {
            Message m = decodePending();
            if (m != null || peerClosed) {
                return m;
            }
            int n = channel.read(pending);
            if (n < 0) {
                if (pending.position() != 0) {
                    throw new EOFException("connection closed in the middle of a frame");
                }
                peerClosed = true;
                return null;
            }
            if (n == 0) {
                return null;
            }
        }
    }

    /** Whether {@link #readAvailable()} saw the peer close the connection between frames. */
    public boolean peerClosed() {
        return peerClosed;
    }

    private Message decodePending() {
        if (pending.position() < WireFormat.HEADER_BYTES) {
            return null;
        }
        ByteBuffer view = pending.duplicate().flip().order(ByteOrder.LITTLE_ENDIAN);
        WireFormat.Header h = WireFormat.decodeHeader(view);
        int total = WireFormat.HEADER_BYTES + h.payloadBytes();
        if (pending.position() < total) {
            return null;
        }
        ByteBuffer payload =
                view.slice(WireFormat.HEADER_BYTES, h.payloadBytes()).order(ByteOrder.LITTLE_ENDIAN);
        Message m;
        if (h.version() != WireFormat.VERSION) {
            m = WireFormat.decodeAnyVersionError(h.type(), payload);
            if (m == null) {
                throw new ProtocolVersionException(
                        "the peer speaks control protocol version " + h.version() + " and this side version "
                                + WireFormat.VERSION + "; run the same TensorSocket release on both sides");
            }
        } else {
            m = WireFormat.decodePayload(h.type(), payload);
        }
        pending.flip().position(total);
        pending.compact();
        return m;
    }

    /**
     * Sends one message. On a non-blocking channel a full send buffer is waited out (frames are small), for at most
     * {@link #WRITE_STALL} without the peer reading anything.
     *
     * @throws IOException if the connection is broken, or the peer read nothing for {@link #WRITE_STALL}
     */
    public void send(Message m) throws IOException {
        send(List.of(m));
    }

    /**
     * Sends messages back to back, in as few writes as the buffer allows (one for a few small frames): each
     * write wakes the peer, so frames that are ready together go together.
     */
    public void send(List<Message> frames) throws IOException {
        synchronized (out) {
            out.clear();
            for (Message m : frames) {
                if (out.remaining() < WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD && out.position() > 0) {
                    write();
                    out.clear();
                }
                WireFormat.encode(m, out);
            }
            write();
        }
    }

    private void write() throws IOException {
        out.flip();
        long stalledSince = 0;
        int idleWrites = 0;
        while (out.hasRemaining()) {
            if (channel.write(out) > 0) {
                stalledSince = 0;
                idleWrites = 0;
                continue;
            }
            long now = System.nanoTime();
            if (stalledSince == 0) {
                stalledSince = now;
            } else if (now - stalledSince > writeStallNanos) {
                throw new IOException("the peer read nothing of this connection for " + writeStallNanos / 1_000_000
                        + " ms while its socket buffer was full (" + out.remaining() + " bytes left to send): it is"
                        + " stopped or stuck");
            }
            // a peer that reads drains the buffer within microseconds; one that does not is waited for gently
            if (++idleWrites < 1000) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(100_000);
            }
        }
    }

    /** Sends without reporting failure: for goodbyes on a connection that may already be gone. */
    public void sendQuietly(Message m) {
        sendQuietly(List.of(m));
    }

    /** As {@link #sendQuietly(Message)}, several frames in one write. */
    public void sendQuietly(List<Message> frames) {
        try {
            send(frames);
        } catch (IOException | RuntimeException ignored) {
            // the peer is gone; nothing to tell it
        }
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing a broken socket has nothing left to report
        }
    }

    /**
     * Closes a refused connection once the peer has read the refusal: closing over unread input resets the
     * connection, and the peer's next read would then fail without the reason.
     */
    public static void closeAfterPeerRead(SocketChannel ch) {
        try (ch) {
            ch.shutdownOutput();
            // Non-blocking reads in a bounded loop: a Unix-domain channel has no read timeout.
            ch.configureBlocking(false);
            ByteBuffer sink = ByteBuffer.allocate(4096);
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < deadline) {
                sink.clear();
                int n = ch.read(sink);
                if (n < 0) {
                    return; // the peer closed after reading the refusal
                }
                if (n == 0) {
                    Thread.sleep(20);
                }
            }
        } catch (IOException | InterruptedException ignored) {
            // the peer is gone either way
        }
    }
}
