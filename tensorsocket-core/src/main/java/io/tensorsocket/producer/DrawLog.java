package io.tensorsocket.producer;

import io.tensorsocket.IndexedSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The draws of a producer that loads by index, in a file of its directory ({@code draws}) that its consumers read to
 * checkpoint their place: with the source's order key (its seed), size and shuffling, the boundaries of each epoch's
 * draw replay every order it served ({@code EpochOrders}), so a consumer's state can say which samples it read, and a
 * producer, this one or a restarted one, can load the rest of its epoch again.
 *
 * <pre>
 *  tensorsocket-draws 1
 *  key 7402398461223 dataset 60000 samples 60000 shuffle 1
 *  0                      epoch 0: a fresh shuffle (no boundary)
 *  1 300 4100             epoch 1: drawn keeping the chunks cut at samples 300 and 4100
 *  2 300
 * </pre>
 *
 * Lines are appended whole; a reader ignores a last line without its newline. The shared test vectors
 * ({@code docs/test-vectors/chunked-shuffle.txt}) hold the draws both languages replay.
 */
final class DrawLog {
    private static final Logger log = LoggerFactory.getLogger(DrawLog.class);
    static final String MAGIC = "tensorsocket-draws 1";

    private final Path file;

    private DrawLog(Path file) {
        this.file = file;
    }

    /** A log at {@code path} of the draws of {@code source}; null where it cannot be written (resuming is then refused). */
    static DrawLog open(Path path, IndexedSource source) {
        try {
            DrawLog d = new DrawLog(path);
            Files.deleteIfExists(path);
            d.write(MAGIC + "\nkey " + orderKey(source) + " dataset " + source.datasetSize() + " samples "
                    + source.samplesPerEpoch() + " shuffle " + (source.shuffles() ? 1 : 0) + "\n");
            return d;
        } catch (IOException e) {
            log.warn("cannot write the draws of this producer to {} ({}); consumers cannot resume from it", path, e);
            return null;
        }
    }

    /** The key of {@code source}'s orders: its first shuffle's first draw, which differs with its seed (0 unshuffled). */
    static long orderKey(IndexedSource source) {
        return source.shuffles() ? source.shuffleRandom(0).nextLong() : 0;
    }

    /** The producer drew epoch {@code epoch} keeping the chunks cut at {@code boundaries}. */
    void drew(long epoch, int[] boundaries) {
        StringBuilder line = new StringBuilder(Long.toString(epoch));
        for (int b : boundaries) {
            line.append(' ').append(b);
        }
        try {
            write(line.append('\n').toString());
        } catch (IOException e) {
            log.warn(
                    "cannot append to the draws of this producer ({}); consumers may not resume from epoch {}",
                    e,
                    epoch);
        }
    }

    /** Appends {@code s} in one write, opening the file for it alone: a draw is once an epoch, no file stays open. */
    private void write(String s) throws IOException {
        Files.write(file, s.getBytes(StandardCharsets.US_ASCII), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
}
