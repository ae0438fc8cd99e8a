package io.tensorsocket.stream;

/**
 * Where one published producer batch lies: its sequence number (batch {@code seq} lives in slot
 * {@code seq % slots}), producer epoch, index in the epoch, first sample and sample count.
 */
public record BatchPosition(long seq, long epoch, long index, long sampleStart, int samples) {

    /** Stream position of its first sample. */
    public long start(StreamGeometry g) {
        return g.position(epoch, sampleStart);
    }

    /** Stream position just past its last sample. */
    public long end(StreamGeometry g) {
        return start(g) + samples;
    }
}
