package io.tensorsocket.flight;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * The application metadata ({@code app_metadata}) of every message on a stream: 48 bytes, little-endian,
 * readable in Python with {@code struct.unpack('<iiqqqqq', buf)}.
 *
 * <pre>
 *  0       4       8              16             24             32             40             48
 *  ┌───────┬───────┬──────────────┬──────────────┬──────────────┬──────────────┬──────────────┐
 *  │ magic │ kind  │ epoch        │ index        │ sample_start │ stream_pos   │ samples      │
 *  └───────┴───────┴──────────────┴──────────────┴──────────────┴──────────────┴──────────────┘
 *  magic  0x54534631 ("TSF1" read as a little-endian int)
 *  kind   1 BATCH          a record batch follows: batch `index` of the consumer's epoch `epoch`, samples
 *                          [sample_start, sample_start + samples) of that epoch; stream_pos is the
 *                          producer-stream position of its first sample (epoch * samples_per_epoch + ...)
 *         2 END_OF_EPOCH   no data: the consumer's epoch `epoch` ended after `index` batches, `samples` samples
 *         3 END_OF_STREAM  no data: the producer's stream ended; the call completes next
 *         4 HEARTBEAT      no data: the server is alive but has no batch yet (sent after 0.5 s of silence)
 * </pre>
 *
 * @param kind        message kind
 * @param epoch       consumer epoch
 * @param index       batch index within the epoch (END_OF_EPOCH: batches in the epoch)
 * @param sampleStart position in the epoch of the batch's first sample
 * @param streamPosition producer-stream position of the batch's first sample
 * @param samples     samples in the batch (END_OF_EPOCH: samples in the epoch)
 */
public record RecordTag(Kind kind, long epoch, long index, long sampleStart, long streamPosition, long samples) {

    /** Bytes of an encoded tag. */
    public static final int BYTES = 48;

    static final int MAGIC = 0x54534631;

    /** Message kinds. */
    public enum Kind {
        BATCH(1),
        END_OF_EPOCH(2),
        END_OF_STREAM(3),
        HEARTBEAT(4);

        final int code;

        Kind(int code) {
            this.code = code;
        }

        static Kind of(int code) {
            for (Kind k : values()) {
                if (k.code == code) {
                    return k;
                }
            }
            throw new IllegalArgumentException("unknown message kind " + code);
        }
    }

    static RecordTag heartbeat() {
        return new RecordTag(Kind.HEARTBEAT, 0, 0, 0, 0, 0);
    }

    /** Encodes the tag into a fresh buffer whose ownership passes to the caller (Flight takes it). */
    public ArrowBuf encode(BufferAllocator allocator) {
        ArrowBuf buf = allocator.buffer(BYTES);
        buf.setInt(0, MAGIC);
        buf.setInt(4, kind.code);
        buf.setLong(8, epoch);
        buf.setLong(16, index);
        buf.setLong(24, sampleStart);
        buf.setLong(32, streamPosition);
        buf.setLong(40, samples);
        buf.writerIndex(BYTES);
        return buf;
    }

    /**
     * Reads a tag from a message's app metadata.
     *
     * @throws IllegalArgumentException if {@code metadata} is missing, short or not a TensorSocket tag
     */
    public static RecordTag decode(byte[] metadata) {
        if (metadata == null || metadata.length < BYTES) {
            throw new IllegalArgumentException("message without a TensorSocket tag ("
                    + (metadata == null ? "no" : metadata.length + " bytes of") + " app metadata)");
        }
        ByteBuffer b = ByteBuffer.wrap(metadata).order(ByteOrder.LITTLE_ENDIAN);
        if (b.getInt(0) != MAGIC) {
            throw new IllegalArgumentException("message tag has magic 0x" + Integer.toHexString(b.getInt(0))
                    + ", not TensorSocket's 0x" + Integer.toHexString(MAGIC));
        }
        return new RecordTag(
                Kind.of(b.getInt(4)), b.getLong(8), b.getLong(16), b.getLong(24), b.getLong(32), b.getLong(40));
    }
}
