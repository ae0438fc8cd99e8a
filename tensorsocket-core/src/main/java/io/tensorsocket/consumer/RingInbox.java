package io.tensorsocket.consumer;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.arena.DescriptorRings;
import io.tensorsocket.arena.Futex;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.WireFormat;

import java.nio.ByteBuffer;

/**
 * A consumer's descriptor ring read as messages: the iterating thread's end of
 * {@link DescriptorRings.Reader}, decoding each entry as the frame it holds. Only stream events may come
 * this way; anything else is the producer breaking the protocol.
 */
final class RingInbox implements AutoCloseable {
    private final DescriptorRings rings;
    private final DescriptorRings.Reader reader;
    private final Futex futex = new Futex();

    /** Reads {@code reader}, one of {@code rings}, which it closes when closed. */
    RingInbox(DescriptorRings rings, DescriptorRings.Reader reader) {
        this.rings = rings;
        this.reader = reader;
    }

    @Override
    public void close() {
        rings.close();
    }

    /**
     * The next message, or null if none is published.
     *
     * @throws DescriptorRings.RingTakenException if the producer gave the ring to another consumer
     * @throws ProtocolException                  if an entry is not a stream event of this version
     */
    Message poll() {
        ByteBuffer f = reader.poll();
        return f == null ? null : decode(f);
    }

    static Message decode(ByteBuffer f) {
        WireFormat.Header h = WireFormat.decodeHeader(f);
        if (h.version() != WireFormat.VERSION || h.payloadBytes() > f.remaining()) {
            throw new ProtocolException("descriptor ring entry of version " + h.version() + " with " + h.payloadBytes()
                    + " payload bytes is not a frame this consumer reads");
        }
        Message m = WireFormat.decodePayload(h.type(), f.slice(f.position(), h.payloadBytes()));
        if (!(m instanceof Message.BatchReady || m instanceof Message.EpochEnd || m instanceof Message.EndOfStream)) {
            throw new ProtocolException("descriptor ring entry holds " + m.getClass().getSimpleName()
                    + ", which only the socket carries");
        }
        return m;
    }

    /** Whether an entry waits. */
    boolean ready() {
        return reader.ready();
    }

    /** Whether the entries not yet taken include the stream's END (so the producer closing its socket is no failure). */
    boolean endPending() {
        return reader.anyUnread(f -> {
            try {
                return decode(f) instanceof Message.EndOfStream;
            } catch (ProtocolException e) {
                return false;
            }
        });
    }

    int doorbell() {
        return reader.doorbell();
    }

    /** Sleeps until the doorbell moves from {@code seen}, at most {@code nanos}. */
    void park(int seen, long nanos) {
        reader.park(futex, seen, nanos);
    }

    DescriptorRings.Reader reader() {
        return reader;
    }
}
