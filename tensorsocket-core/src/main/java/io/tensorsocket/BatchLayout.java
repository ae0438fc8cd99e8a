package io.tensorsocket;

import java.util.HashSet;
import java.util.List;
import java.util.Map;

/**
 * What every batch of a source looks like: its tensors, in order, and the number of samples in a full
 * batch (the loader's batch size). Batches may hold fewer samples, never more.
 */
public record BatchLayout(List<TensorSpec> tensors, int batchSize) {
    public BatchLayout {
        tensors = List.copyOf(tensors);
        if (tensors.isEmpty()) {
            throw new IllegalArgumentException("a batch layout needs at least one tensor");
        }
        if (batchSize < 1) {
            throw new IllegalArgumentException("the loader's batch size must be at least 1, got " + batchSize);
        }
        var names = new HashSet<String>();
        for (TensorSpec s : tensors) {
            if (!names.add(s.name())) {
                throw new IllegalArgumentException("tensor name '" + s.name() + "' appears twice");
            }
        }
    }

    /** The layout of {@code batch}, taking its size as the full batch size. */
    public static BatchLayout of(Batch batch) {
        return new BatchLayout(
                batch.tensors().entrySet().stream()
                        .map(e -> TensorSpec.of(e.getKey(), e.getValue()))
                        .toList(),
                batch.size());
    }

    /** Bytes of one sample over all tensors. */
    public long sampleBytes() {
        long b = 0;
        for (TensorSpec s : tensors) {
            b += s.sampleBytes();
        }
        return b;
    }

    /** Position of tensor {@code name}, or -1. */
    public int indexOf(String name) {
        for (int i = 0; i < tensors.size(); i++) {
            if (tensors.get(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Checks that {@code batch} fits this layout.
     *
     * @throws IllegalArgumentException saying what differs
     */
    public void check(Batch batch) {
        Map<String, Tensor> ts = batch.tensors();
        if (ts.size() != tensors.size()
                || !ts.keySet()
                        .containsAll(tensors.stream().map(TensorSpec::name).toList())) {
            throw new IllegalArgumentException(
                    "batch has tensors " + ts.keySet() + " but the source's layout is " + tensors);
        }
        for (TensorSpec s : tensors) {
            Tensor t = ts.get(s.name());
            if (!s.matches(t)) {
                throw new IllegalArgumentException(
                        "tensor '" + s.name() + "' is " + t + " but the layout says " + s.describe() + " per sample");
            }
        }
        if (batch.size() < 1 || batch.size() > batchSize) {
            throw new IllegalArgumentException(
                    "batch of " + batch.size() + " samples; the source's batches hold 1 to " + batchSize);
        }
    }
}
