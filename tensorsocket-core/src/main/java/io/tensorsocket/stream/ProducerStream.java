package io.tensorsocket.stream;

/**
 * The producer's place in its stream: the epoch, batch index and sample where the next published batch
 * lies, the newest published sequence number, and the first batch of the current epoch. It checks the
 * shape rules a source must keep: every batch but an epoch's last holds exactly the batch size, and an
 * epoch holds exactly {@code samplesPerEpoch} samples.
 */
public final class ProducerStream {
    private final StreamGeometry geometry;
    private long nextEpoch;
    private long nextIndex;
    private long nextSample;
    private long publishedSeq = -1;
    private long epochStartSeq = -1;
    /** Where a resumed stream ends ({@link #resumeAnywhere}): a batch that ends there may be short. */
    private long endsAt = -1;

    /** A stream whose first epoch is epoch 0. */
    public ProducerStream(StreamGeometry geometry) {
        this(geometry, 0);
    }

    /**
     * A stream whose first epoch is {@code firstEpoch}: a relay numbers its epochs as its upstream does, so its
     * stream positions start at {@code firstEpoch × samplesPerEpoch}.
     */
    public ProducerStream(StreamGeometry geometry, long firstEpoch) {
        if (firstEpoch < 0) {
            throw new IllegalArgumentException("the first epoch is 0 or later, not " + firstEpoch);
        }
        this.geometry = geometry;
        this.nextEpoch = firstEpoch;
    }

    /**
     * Places a stream that published nothing yet at {@code sample} of epoch {@code epoch}, a batch boundary: a lane's
     * stream begins where its consumer left the main stream.
     *
     * @throws IllegalArgumentException if that is no batch boundary inside an epoch, or batches were published
     */
    public void resumeAt(long epoch, long sample) {
        if (publishedSeq >= 0
                || epoch < 0
                || sample < 0
                || sample >= geometry.samplesPerEpoch()
                || sample % geometry.producerBatchSize() != 0) {
            throw new IllegalArgumentException("a stream resumes at a batch boundary of an epoch before it published"
                    + " anything, not at sample " + sample + " of epoch " + epoch);
        }
        nextEpoch = epoch;
        nextSample = sample;
        nextIndex = sample / geometry.producerBatchSize();
    }

    /**
     * Places a stream that published nothing yet at {@code sample} of epoch {@code epoch}, anywhere in it, to end at
     * stream position {@code endsAt}, where its last batch may be short: a resumed consumer's lane loads the rest of its
     * epoch from the first sample it did not read.
     */
    public void resumeAnywhere(long epoch, long sample, long endsAt) {
        if (publishedSeq >= 0 || epoch < 0 || sample < 0 || sample >= geometry.samplesPerEpoch()) {
            throw new IllegalArgumentException("a stream resumes inside an epoch before it published anything, not at"
                    + " sample " + sample + " of epoch " + epoch);
        }
        nextEpoch = epoch;
        nextSample = sample;
        nextIndex = sample / geometry.producerBatchSize();
        this.endsAt = endsAt;
    }

    public StreamGeometry geometry() {
        return geometry;
    }

    /**
     * Places the batch {@code seq} of {@code samples} samples after the last one published.
     *
     * @throws IllegalArgumentException if the sample count is out of range
     * @throws IllegalStateException    if the source breaks the epoch's shape
     */
    public BatchPosition publish(long seq, int samples) {
        int b = geometry.producerBatchSize();
        long spe = geometry.samplesPerEpoch();
        if (samples < 1 || samples > b) {
            throw new IllegalArgumentException("a batch holds 1 to " + b + " samples, not " + samples);
        }
        if (seq != publishedSeq + 1) {
            throw new IllegalStateException("batch " + seq + " published after batch " + publishedSeq);
        }
        if (nextSample + samples > spe) {
            throw new IllegalStateException("the source emitted more than the " + spe
                    + " samples per epoch it declared (epoch " + nextEpoch + ")");
        }
        if (samples < b && nextSample + samples < spe && geometry.position(nextEpoch, nextSample + samples) != endsAt) {
            throw new IllegalStateException("batch " + nextIndex + " of epoch " + nextEpoch + " holds " + samples
                    + " samples; only an epoch's last batch may hold fewer than the batch size " + b);
        }
        BatchPosition p = new BatchPosition(seq, nextEpoch, nextIndex, nextSample, samples);
        if (nextSample == 0) {
            epochStartSeq = seq;
        }
        publishedSeq = seq;
        nextIndex++;
        nextSample += samples;
        return p;
    }

    /**
     * Ends epoch {@code epoch} (the source returned from it).
     *
     * @throws IllegalStateException if it did not hold exactly {@code samplesPerEpoch} samples
     */
    public void endEpoch(long epoch) {
        if (nextSample != geometry.samplesPerEpoch()) {
            throw new IllegalStateException("the source declared " + geometry.samplesPerEpoch()
                    + " samples per epoch but epoch " + epoch + " yielded " + nextSample);
        }
        nextEpoch = epoch + 1;
        nextSample = 0;
        nextIndex = 0;
        epochStartSeq = -1;
    }

    /** Whether the current epoch published every sample (its end may be announced). */
    public boolean epochComplete() {
        return nextSample == geometry.samplesPerEpoch();
    }

    public long nextEpoch() {
        return nextEpoch;
    }

    public long nextIndex() {
        return nextIndex;
    }

    public long nextSample() {
        return nextSample;
    }

    /** Stream position of the next sample to be published. */
    public long nextPosition() {
        return geometry.position(nextEpoch, nextSample);
    }

    /** The newest published sequence number, or -1 before the first. */
    public long publishedSeq() {
        return publishedSeq;
    }

    /** The sequence number of the current epoch's first batch, or -1 before it is published. */
    public long epochStartSeq() {
        return epochStartSeq;
    }
}
