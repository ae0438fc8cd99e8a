package io.tensorsocket.djl;

import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.IndexedSource;
import io.tensorsocket.Tensor;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Serves a DJL {@link RandomAccessDataset} in the order the producer chooses ({@link IndexedSource}), so that
 * consumers joining mid-epoch get exact epochs: each epoch the dataset is read through DJL's own
 * {@code getData(manager, sampler)} (its pipelines and batchifier apply) with a sampler that yields the producer's
 * order in batches of {@code batchSize}. Without consumers joining mid-epoch an epoch is a fresh seeded shuffle (or
 * {@code 0..n-1} without shuffling). Built by {@link DjlDatasetSource.Builder#byIndex(int)}.
 */
public final class DjlIndexedSource implements IndexedSource {
    private final RandomAccessDataset dataset;
    private final List<String> dataNames;
    private final List<String> labelNames;
    private final int batchSize;
    private final boolean shuffle;
    private final boolean dropLast;
    private final long seed;
    private final NDManager manager = NDManager.newBaseManager();
    private BatchLayout layout;

    DjlIndexedSource(
            RandomAccessDataset dataset,
            List<String> dataNames,
            List<String> labelNames,
            int batchSize,
            boolean shuffle,
            boolean dropLast,
            long seed) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be at least 1, got " + batchSize);
        }
        if (dataset.size() < 1 || dataset.size() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a DJL dataset served by index holds 1 to " + Integer.MAX_VALUE
                    + " samples, not " + dataset.size());
        }
        if (dropLast && dataset.size() < batchSize) {
            throw new IllegalArgumentException("drop-last with batch size " + batchSize + " leaves nothing of "
                    + dataset.size() + " samples; use a smaller batch size or keep the last batch");
        }
        this.dataset = dataset;
        this.dataNames = dataNames;
        this.labelNames = labelNames;
        this.batchSize = batchSize;
        this.shuffle = shuffle;
        this.dropLast = dropLast;
        this.seed = seed;
    }

    @Override
    public synchronized BatchLayout layout() {
        if (layout == null) {
            int[] first = IntStream.range(0, Math.min(batchSize, datasetSize())).toArray();
            Iterator<ai.djl.training.dataset.Batch> it = batches(first);
            try (ai.djl.training.dataset.Batch b = it.next()) {
                layout = new BatchLayout(BatchLayout.of(convert(b)).tensors(), batchSize);
            }
        }
        return layout;
    }

    @Override
    public long samplesPerEpoch() {
        return dropLast ? (long) datasetSize() / batchSize * batchSize : datasetSize();
    }

    @Override
    public int datasetSize() {
        return (int) dataset.size();
    }

    @Override
    public boolean shuffles() {
        return shuffle;
    }

    @Override
    public OptionalLong shuffleSeed() {
        return OptionalLong.of(seed);
    }

    @Override
    public SplittableRandom shuffleRandom(long epoch) {
        return new SplittableRandom(seed * 0x9E3779B97F4A7C15L + epoch);
    }

    @Override
    public void emitEpoch(long epoch, int[] order, BatchSink sink) {
        Iterator<ai.djl.training.dataset.Batch> it = batches(order);
        while (it.hasNext()) {
            try (ai.djl.training.dataset.Batch b = it.next()) {
                sink.put(convert(b));
            }
        }
    }

    @Override
    public String description() {
        return "djl " + dataset.getClass().getSimpleName() + " data=" + dataNames + " labels=" + labelNames
                + " by index, batch " + batchSize + (shuffle ? ", shuffled, seed " + seed : "");
    }

    @Override
    public void close() {
        manager.close();
    }

    private Iterator<ai.djl.training.dataset.Batch> batches(int[] order) {
        try {
            return dataset.getData(manager, new OrderSampler(order, batchSize)).iterator();
        } catch (Exception e) {
            throw new IllegalStateException("the DJL dataset failed to start an epoch: " + e, e);
        }
    }

    private Batch convert(ai.djl.training.dataset.Batch b) {
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        DjlDatasetSource.put(tensors, dataNames, b.getData(), "data");
        DjlDatasetSource.put(tensors, labelNames, b.getLabels(), "labels");
        return Batch.of(tensors);
    }

    /** A DJL sampler that yields {@code order} in batches of {@code batchSize}, the last one perhaps short. */
    private record OrderSampler(int[] order, int batchSize) implements Sampler {
        @Override
        public Iterator<List<Long>> sample(RandomAccessDataset dataset) {
            return new Iterator<>() {
                private int next;

                @Override
                public boolean hasNext() {
                    return next < order.length;
                }

                @Override
                public List<Long> next() {
                    int end = Math.min(order.length, next + batchSize);
                    List<Long> batch = IntStream.range(next, end)
                            .mapToObj(i -> (long) order[i])
                            .toList();
                    next = end;
                    return batch;
                }
            };
        }

        @Override
        public int getBatchSize() {
            return batchSize;
        }
    }
}
