package io.tensorsocket.pipeline;

import java.io.IOException;

/** A sample could not be read or transformed; the message names the sample and its file. */
public class SampleLoadException extends IOException {
    private final long sampleId;

    public SampleLoadException(long sampleId, String message, Throwable cause) {
        super(message, cause);
        this.sampleId = sampleId;
    }

    /** Index of the failed sample in its data set. */
    public long sampleId() {
        return sampleId;
    }
}
