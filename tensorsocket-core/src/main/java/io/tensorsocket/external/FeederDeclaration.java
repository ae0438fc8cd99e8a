package io.tensorsocket.external;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSource;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.protocol.Message;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;

/** What a feeder may declare in its FEEDER_HELLO: the checks, each failure said in words for its refusal. */
final class FeederDeclaration {

    /** The most lane connections a feeder may open. */
    static final int MAX_LANES = 64;

    private FeederDeclaration() {}

    /** What is wrong with declaration {@code h}, or null if nothing is. */
    static String problem(Message.FeederHello h) {
        if (h.batchSize() < 1) {
            return "batch size " + h.batchSize() + " (it must be at least 1)";
        }
        if (h.samplesPerEpoch() < 1) {
            return h.samplesPerEpoch() + " samples per epoch (an epoch needs at least 1)";
        }
        if (h.epochs() < 0) {
            return h.epochs() + " epochs (0 means until the feeder stops; more is a count)";
        }
        if (h.datasetSize() < 0 || h.datasetSize() > Integer.MAX_VALUE) {
            return "a data set of " + h.datasetSize() + " samples (0 for a feeder that keeps its own order, else 1 to "
                    + Integer.MAX_VALUE + ")";
        }
        long n = h.datasetSize();
        if (n > 0 && h.samplesPerEpoch() != n && h.samplesPerEpoch() != n / h.batchSize() * h.batchSize()) {
            return h.samplesPerEpoch() + " samples per epoch of a data set of " + n + " loaded by index (an epoch holds"
                    + " all of them, or with drop-last " + n / h.batchSize() * h.batchSize() + ")";
        }
        if (h.lanes() > MAX_LANES || (h.lanes() > 0 && n == 0)) {
            return h.lanes() + " lane connections"
                    + (n == 0
                            ? " from a feeder that keeps its own order (a lane loads"
                                    + " samples by index: declare the data set's size)"
                            : " (at most " + MAX_LANES + ")");
        }
        if (h.tensors().isEmpty()) {
            return "no tensors (a batch needs at least one)";
        }
        Set<String> names = new HashSet<>();
        for (TensorSpec t : h.tensors()) {
            if (!names.add(t.name())) {
                return "tensor '" + t.name() + "' is declared twice";
            }
        }
        try {
            new BatchLayout(h.tensors(), h.batchSize());
        } catch (RuntimeException e) {
            return e.getMessage();
        }
        if (h.description().getBytes(StandardCharsets.UTF_8).length > BatchSource.MAX_DESCRIPTION_BYTES) {
            return "a description longer than " + BatchSource.MAX_DESCRIPTION_BYTES + " bytes";
        }
        return null;
    }
}
