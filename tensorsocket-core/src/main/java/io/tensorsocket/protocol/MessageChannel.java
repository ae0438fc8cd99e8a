package io.tensorsocket.protocol;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;

/**
 * A blocking control connection that reads and writes whole frames ({@link WireFormat}). One thread
 * reads; any thread may send, one frame at a time.
 */
public final class MessageChannel implements AutoCloseable {
    private final SocketChannel channel;
    private final ByteBuffer in = ByteBuffer.allocate(WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD)
            .order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer out = ByteBuffer.allocate(WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD)
            .order(ByteOrder.LITTLE_ENDIAN);

    public MessageChannel(SocketChannel channel) {
        this.channel = channel;
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
            throw new ProtocolVersionException("the peer speaks control protocol version " + h.version()
                    + " and this side version " + WireFormat.VERSION + "; run the same TensorSocket release on both sides");
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

    /** Sends one message. */
    public void send(Message m) throws IOException {
        synchronized (out) {
            out.clear();
            WireFormat.encode(m, out);
            out.flip();
            while (out.hasRemaining()) {
                channel.write(out);
            }
        }
    }

    /** Sends without reporting failure: for goodbyes on a connection that may already be gone. */
    public void sendQuietly(Message m) {
        try {
            send(m);
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
}
