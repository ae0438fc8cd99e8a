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

    private FeederDeclaration() {
    }

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
