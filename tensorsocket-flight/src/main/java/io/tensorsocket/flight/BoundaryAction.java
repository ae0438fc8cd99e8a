package io.tensorsocket.flight;

import io.tensorsocket.spi.UpstreamBoundaries;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The Flight action {@value #TYPE}: a relay asks the server's producer to keep, or let go, the boundary of one of
 * the relay's own consumers that joined mid-epoch, so that its epochs are exact ({@link UpstreamBoundaries}). The
 * relay names its stream by the consumer id the stream's header gave it ({@code tensorsocket.consumer_id}); the
 * server answers only for the consumers of its own streams.
 *
 * <pre>
 *   request body, little-endian, 21 bytes
 *   +------+-------------+-----------+------------+
 *   | op   | consumer id | epoch     | sample     |
 *   | u8   | i32         | i64       | i64        |
 *   +------+-------------+-----------+------------+
 *     op: 1 keep, 2 release; sample: the offset in the epoch, in (0, samples per epoch)
 *
 *   answer: one result of one byte
 *     keep:    0 kept, 1 too late (the next epoch's order is drawn), 2 unavailable
 *     release: 0
 * </pre>
 *
 * <p>A server without the action (before it existed) answers UNIMPLEMENTED, which a relay takes as unavailable.
 */
final class BoundaryAction {
    /** The action's type. */
    static final String TYPE = "boundary";

    static final byte KEEP = 1;
    static final byte RELEASE = 2;
    private static final int BYTES = 21;

    /** One decoded request. */
    record Request(byte op, int consumerId, long epoch, long sample) {}

    private BoundaryAction() {}

    static byte[] encode(Request r) {
        ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.put(r.op()).putInt(r.consumerId()).putLong(r.epoch()).putLong(r.sample());
        return b.array();
    }

    /** @throws IllegalArgumentException for a body of another length or an unknown op */
    static Request decode(byte[] body) {
        if (body == null || body.length != BYTES) {
            throw new IllegalArgumentException(
                    "a boundary request is " + BYTES + " bytes, not " + (body == null ? 0 : body.length));
        }
        ByteBuffer b = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        Request r = new Request(b.get(), b.getInt(), b.getLong(), b.getLong());
        if (r.op() != KEEP && r.op() != RELEASE) {
            throw new IllegalArgumentException("unknown boundary op " + r.op() + " (1 keep, 2 release)");
        }
        return r;
    }

    static byte[] answer(UpstreamBoundaries.Answer a) {
        return new byte[] {(byte) a.ordinal()};
    }

    /** @throws IllegalArgumentException for anything but one byte naming an answer */
    static UpstreamBoundaries.Answer answer(byte[] body) {
        UpstreamBoundaries.Answer[] all = UpstreamBoundaries.Answer.values();
        if (body == null || body.length != 1 || body[0] < 0 || body[0] >= all.length) {
            throw new IllegalArgumentException("a boundary answer is one byte 0.." + (all.length - 1));
        }
        return all[body[0]];
    }
}
