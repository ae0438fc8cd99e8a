package io.tensorsocket.cli;

import io.tensorsocket.Batch;
import io.tensorsocket.Tensor;
import io.tensorsocket.source.SyntheticSource;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.IntToLongFunction;

/**
 * {@code consume --ids-out}: one line per batch received, {@code POSITION ID ID ...} (its stream position, then
 * its samples' ids, at consecutive positions), so that a test can check that consumers saw the same sample at every
 * stream position they share; a rank of a job, whose samples are not consecutive, writes a line per sample. With no
 * file it writes nothing.
 */
final class IdLog implements AutoCloseable {
    private final BufferedWriter out;

    private IdLog(BufferedWriter out) {
        this.out = out;
    }

    static IdLog open(Path file) throws IOException {
        return new IdLog(file == null ? null : Files.newBufferedWriter(file));
    }

    void write(IntToLongFunction positionOf, boolean consecutive, Batch batch) {
        if (out == null) {
            return;
        }
        Tensor id = batch.tensor(SyntheticSource.ID);
        StringBuilder line = new StringBuilder(16 + 8 * batch.size()).append(positionOf.applyAsLong(0));
        for (int i = 0; i < batch.size(); i++) {
            if (i > 0 && !consecutive) {
                line.append('\n').append(positionOf.applyAsLong(i));
            }
            line.append(' ').append(id.getLong(i));
        }
        try {
            out.write(line.append('\n').toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the ids of batches received: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() throws IOException {
        if (out != null) {
            out.close();
        }
    }
}
