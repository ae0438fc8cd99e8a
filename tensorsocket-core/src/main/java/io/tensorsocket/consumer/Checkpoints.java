package io.tensorsocket.consumer;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ConsumerState;
import io.tensorsocket.JobRank;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.ConsumerStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A local consumer's checkpoints: the {@link ConsumerState} it stands at (with the draws of its epoch from the
 * producer's {@link DrawsFile}), and the RESUME that continues one (the Python client's {@code _checkpoint} is the same
 * rule).
 */
final class Checkpoints {
    private Checkpoints() {}

    /** The state of a consumer of {@code options} on {@code stream}: an epoch read whole stands at the next one. */
    static ConsumerState take(
            Path dir, String producer, ConsumerOptions options, Message.Welcome w, ConsumerStream stream) {
        long n = w.samplesPerEpoch();
        long base;
        long handed;
        if (!stream.epochStarted()) {
            base = stream.startPosition();
            handed = 0;
        } else if (stream.handed() >= stream.samplesPerEpoch()) {
            base = stream.epochBase() + n;
            handed = 0;
        } else {
            base = stream.epochBase();
            handed = stream.handed();
        }
        JobRank r = options.jobRank();
        DrawsFile draws = DrawsFile.read(dir);
        long x = base / n;
        return new ConsumerState(
                producer,
                n,
                base,
                handed,
                options.batchSize(),
                options.dropLast(),
                r == null ? null : r.job(),
                r == null ? 0 : r.rank(),
                r == null ? 1 : r.worldSize(),
                draws == null ? null : draws.header().get("key"),
                draws == null ? null : draws.header().get("dataset").intValue(),
                draws == null ? null : draws.header().get("shuffle") == 1,
                draws == null ? null : draws.chain(x, base % n == 0 ? x : x + 1));
    }

    /**
     * The RESUME that continues {@code state} for a consumer of {@code options} of {@code producer}, or null where
     * nothing of its epoch is left.
     *
     * @throws IllegalArgumentException where the state is another consumer's, or its producer logged no draws
     */
    static Message.Resume resume(String producer, ConsumerOptions options, ConsumerState state) {
        JobRank r = options.jobRank();
        List<String> differ = new ArrayList<>();
        differ(differ, "producer", state.producer(), producer);
        differ(differ, "batch size", state.batchSize(), options.batchSize());
        differ(differ, "drop last", state.dropLast(), options.dropLast());
        differ(differ, "job", state.job(), r == null ? null : r.job());
        differ(differ, "rank", state.rank(), r == null ? 0 : r.rank());
        differ(differ, "world size", state.worldSize(), r == null ? 1 : r.worldSize());
        if (!differ.isEmpty()) {
            throw new IllegalArgumentException("the state was taken by another consumer: " + String.join("; ", differ));
        }
        if (state.handed() == 0) {
            return null;
        }
        if (state.draws() == null) {
            throw new IllegalArgumentException("the state's producer '" + state.producer() + "' logged no draws (its"
                    + " source fixes its own order): the rest of its epoch cannot be loaded again");
        }
        return new Message.Resume(
                state.epochBase(),
                state.handed(),
                state.orderKey(),
                state.datasetSize(),
                state.samplesPerEpoch(),
                state.shuffle(),
                state.draws());
    }

    private static void differ(List<String> out, String what, Object theirs, Object mine) {
        if (!Objects.equals(theirs, mine)) {
            out.add(what + " " + theirs + " (this consumer: " + mine + ")");
        }
    }
}
