package io.tensorsocket.consumer;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.WireFormat;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.rings.Futex;
import java.nio.ByteBuffer;

/**
 * Stream events that come through the consumer's descriptor ring in shared memory: the iterating thread's
 * end of {@link DescriptorRings.Reader}, decoding each entry as the frame it holds. Only stream events may
 * come this way; anything else is the producer breaking the protocol. A waiting iterator polls the ring,
 * spins if asked to, then sleeps on its doorbell (a futex the producer rings only when the iterator
 * sleeps); the link's watchdog, which keeps the socket, rings it when the socket brings an ERROR or ends.
 */
final class RingInbox implements Inbox {
    /**
     * The longest an iterator sleeps on the doorbell before it looks again: a lost wake-up (there should be
     * none) costs this much, never a hang, and an interrupt is seen within it.
     */
    private static final long PARK_NANOS = 100_000_000L;

    private final ConsumerLink link;
    private final DescriptorRings rings;
    private final DescriptorRings.Reader reader;
    private final Futex futex = new Futex();
    private boolean waited;

    /** Reads {@code reader}, one of {@code rings}, which it closes when closed, for {@code link}. */
    RingInbox(ConsumerLink link, DescriptorRings rings, DescriptorRings.Reader reader) {
        this.link = link;
        this.rings = rings;
        this.reader = reader;
    }

    @Override
    public void close() {
        rings.close();
    }

    @Override
    public Message take(long timeoutNanos, String awaited) {
        long deadline = System.nanoTime() + timeoutNanos;
        waited = false;
        boolean spun = link.spinNanos() == 0;
        while (true) {
            link.checkOpen();
            Message m = poll();
            if (m != null) {
                return m;
            }
            if (link.ended()) { // everything the producer published came before its socket's end, and was taken
                throw link.timeout(timeoutNanos, awaited);
            }
            waited = true;
            if (!spun) {
                spun = true;
                long until = Math.min(deadline, System.nanoTime() + link.spinNanos());
                while (!reader.ready() && !link.news() && System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                continue;
            }
            long now = System.nanoTime();
            long left = deadline - now;
            if (left <= 0) {
                throw link.timeout(timeoutNanos, awaited);
            }
            long live = link.stillLive(now, awaited);
            int bell = reader.doorbell();
            if (reader.ready() || link.news()) {
                continue;
            }
            reader.park(futex, bell, Math.min(PARK_NANOS, Math.min(left, live)));
            ConsumerLink.checkInterrupt(awaited);
        }
    }

    @Override
    public Message poll() {
        Message m = fromRing();
        return m != null ? m : link.queued();
    }

    /** The ring's next message, or null; a ring given to someone else is the producer having let this consumer go. */
    private Message fromRing() {
        ByteBuffer f;
        try {
            f = reader.poll();
        } catch (DescriptorRings.RingTakenException e) {
            throw link.detached(e.getMessage()); // the producer's ERROR (an eviction, most likely) says why, if it came
        }
        if (f == null) {
            return null;
        }
        Message m;
        try {
            m = decode(f);
        } catch (ProtocolException e) {
            throw link.violated(e);
        }
        link.heard(m);
        return m;
    }

    @Override
    public boolean waited() {
        return waited;
    }

    @Override
    public void abortWait() {
        try {
            reader.knock(new Futex());
        } catch (IllegalStateException unmapped) {
            // A close on another thread unmapped the ring first: nobody waits on it any more.
        }
    }

    static Message decode(ByteBuffer f) {
        WireFormat.Header h = WireFormat.decodeHeader(f);
        if (h.version() != WireFormat.VERSION || h.payloadBytes() > f.remaining()) {
            throw new ProtocolException("descriptor ring entry of version " + h.version() + " with " + h.payloadBytes()
                    + " payload bytes is not a frame this consumer reads");
        }
        Message m = WireFormat.decodePayload(h.type(), f.slice(f.position(), h.payloadBytes()));
        if (!(m instanceof Message.BatchReady
                || m instanceof Message.EpochEnd
                || m instanceof Message.EndOfStream
                || m instanceof Message.Move)) {
            throw new ProtocolException(
                    "descriptor ring entry holds " + m.getClass().getSimpleName() + ", which only the socket carries");
        }
        return m;
    }

    /** Whether the entries not yet taken include the stream's END (so the producer closing its socket is no failure). */
    @Override
    public boolean endPending() {
        return reader.anyUnread(f -> {
            try {
                return decode(f) instanceof Message.EndOfStream;
            } catch (ProtocolException e) {
                return false;
            }
        });
    }

    DescriptorRings.Reader reader() {
        return reader;
    }
}
