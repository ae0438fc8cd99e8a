package io.tensorsocket.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Dataset;
import ai.djl.translate.Batchifier;
import ai.djl.util.Progress;
import io.tensorsocket.Batch;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorSpec;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * A DJL {@link Dataset} that reads from a shared producer, so {@code EasyTrain.fit(trainer, epochs,
 * shared, validation)} and hand-written loops work unchanged. Each {@link #getData(NDManager)} is one
 * epoch of the consumer.
 *
 * <p>NDArrays wrap the shared memory without a copy, read-only: a model must not modify its input
 * arrays in place. Each DJL batch owns a sub-manager; {@code batch.close()} frees its arrays and
 * releases the shared batch. Asking for the next batch closes the previous one first, so no array ever
 * outlives the memory under it.
 *
 * <pre>{@code
 * try (TensorConsumer c = TensorConsumer.connect("fmnist", ConsumerOptions.batchSize(128))) {
 *     EasyTrain.fit(trainer, 5, SharedDataset.of(c, "image", "label"), testSet);
 * }
 * }</pre>
 */
public final class SharedDataset implements Dataset {
    private final TensorConsumer consumer;
    private final List<String> dataNames;
    private final List<String> labelNames;
    private volatile long lastEpochSamples;

    private SharedDataset(TensorConsumer consumer, List<String> dataNames, List<String> labelNames) {
        List<String> names = consumer.tensors().stream().map(TensorSpec::name).toList();
        for (String n : dataNames) {
            require(names, n);
        }
        for (String n : labelNames) {
            require(names, n);
        }
        this.consumer = consumer;
        this.dataNames = List.copyOf(dataNames);
        this.labelNames = List.copyOf(labelNames);
    }

    private static void require(List<String> names, String n) {
        if (!names.contains(n)) {
            throw new IllegalArgumentException("the producer's batches have no tensor '" + n + "'; they hold " + names);
        }
    }

    /** One data tensor and one label tensor, by name. */
    public static SharedDataset of(TensorConsumer consumer, String data, String label) {
        return new SharedDataset(consumer, List.of(data), List.of(label));
    }

    /** Several data and label tensors, by name, in the order the model takes them. */
    public static SharedDataset of(TensorConsumer consumer, List<String> data, List<String> labels) {
        return new SharedDataset(consumer, data, labels);
    }

    /** Samples handed out by the most recent (or current) epoch. */
    public long lastEpochSamples() {
        return lastEpochSamples;
    }

    /** Batches per epoch. */
    public long size() {
        return consumer.size();
    }

    @Override
    public Iterable<ai.djl.training.dataset.Batch> getData(NDManager manager) {
        return () -> new Epoch(manager);
    }

    @Override
    public void prepare(Progress progress) {
        // the producer prepares the data
    }

    private final class Epoch implements Iterator<ai.djl.training.dataset.Batch> {
        private final NDManager manager;
        private final Iterator<Batch> batches = consumer.iterator();
        private final long total = consumer.size();
        private long index;
        private SharedBatch previous;

        Epoch(NDManager manager) {
            this.manager = manager;
            lastEpochSamples = 0;
        }

        @Override
        public boolean hasNext() {
            return batches.hasNext();
        }

        @Override
        public ai.djl.training.dataset.Batch next() {
            if (previous != null) {
                previous.close(); // its arrays must die before the consumer recycles their memory
            }
            if (!batches.hasNext()) {
                throw new NoSuchElementException();
            }
            Batch b = batches.next();
            lastEpochSamples += b.size();
            NDManager sub = manager.newSubManager();
            try {
                previous = new SharedBatch(sub, wrap(sub, b, dataNames), wrap(sub, b, labelNames), b, index++, total);
                return previous;
            } catch (RuntimeException e) {
                sub.close();
                b.close();
                throw e;
            }
        }
    }

    private static NDList wrap(NDManager manager, Batch batch, List<String> names) {
        NDList list = new NDList(names.size());
        for (String n : names) {
            NDArray a = TensorArrays.view(manager, batch.tensor(n));
            a.setName(n);
            list.add(a);
        }
        return list;
    }

    /** A DJL batch that releases its shared batch when DJL closes it. */
    private static final class SharedBatch extends ai.djl.training.dataset.Batch {
        private final Batch shared;
        private boolean closed;

        SharedBatch(NDManager manager, NDList data, NDList labels, Batch shared, long index, long total) {
            super(manager, data, labels, shared.size(), Batchifier.STACK, Batchifier.STACK, index, total);
            this.shared = shared;
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            super.close();
            shared.close();
        }
    }
}
