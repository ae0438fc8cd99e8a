package io.tensorsocket.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Dataset;
import ai.djl.training.dataset.RandomAccessDataset;
import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.Tensor;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * Serves any DJL {@link Dataset} through a producer, so a DJL pipeline (an {@code ImageFolder}, an
 * {@code ArrayDataset}, a {@code FashionMnist} built from local files, ...) runs once for every
 * consumer. The dataset's own sampler decides batch size and order; each of its batches is copied once
 * into the arena, its data arrays named by {@code dataNames} and its labels by {@code labelNames}. A consumer that
 * joins such a producer mid-epoch rolls; for a {@link RandomAccessDataset},
 * {@link Builder#byIndex(int) byIndex(batchSize)} lets the producer choose the order instead, so that it gets exact
 * epochs ({@link DjlIndexedSource}).
 *
 * <pre>{@code
 * BatchSource source = DjlDatasetSource.builder(dataset).dataNames("image").labelNames("label").build();
 * BatchSource exact = DjlDatasetSource.builder(dataset).dataNames("image").labelNames("label").byIndex(32);
 * }</pre>
 */
public final class DjlDatasetSource implements BatchSource {
    private final Dataset dataset;
    private final List<String> dataNames;
    private final List<String> labelNames;
    private final NDManager manager;
    private final BatchSource delegate;

    private DjlDatasetSource(Builder b) {
        this.dataset = b.dataset;
        this.dataNames = b.dataNames;
        this.labelNames = b.labelNames;
        this.manager = NDManager.newBaseManager();
        long samples =
                b.samplesPerEpoch > 0 ? b.samplesPerEpoch : b.dataset instanceof RandomAccessDataset r ? r.size() : -1;
        if (samples < 1) {
            throw new IllegalArgumentException(
                    "cannot tell how many samples an epoch of this dataset holds; pass samplesPerEpoch");
        }
        this.delegate = BatchSource.fromIterable(epoch -> () -> new Converting(epoch), samples);
    }

    /** Options for serving {@code dataset}. */
    public static Builder builder(Dataset dataset) {
        return new Builder(dataset);
    }

    @Override
    public BatchLayout layout() {
        return delegate.layout();
    }

    @Override
    public long samplesPerEpoch() {
        return delegate.samplesPerEpoch();
    }

    @Override
    public void emitEpoch(long epoch, BatchSink sink) throws Exception {
        delegate.emitEpoch(epoch, sink);
    }

    @Override
    public String description() {
        return "djl " + dataset.getClass().getSimpleName() + " data=" + dataNames + " labels=" + labelNames;
    }

    @Override
    public void close() {
        manager.close();
    }

    /**
     * One epoch of the dataset as TensorSocket batches. Each DJL batch stays open until the producer has
     * copied it, that is until the next one is asked for.
     */
    private final class Converting implements Iterator<Batch> {
        private final Iterator<ai.djl.training.dataset.Batch> batches;
        private ai.djl.training.dataset.Batch open;

        Converting(long epoch) {
            try {
                this.batches = dataset.getData(manager).iterator();
            } catch (Exception e) {
                throw new IllegalStateException("the DJL dataset failed to start epoch " + epoch + ": " + e, e);
            }
        }

        @Override
        public boolean hasNext() {
            closeOpen();
            return batches.hasNext();
        }

        @Override
        public Batch next() {
            closeOpen();
            if (!batches.hasNext()) {
                throw new NoSuchElementException();
            }
            open = batches.next();
            Map<String, Tensor> tensors = new LinkedHashMap<>();
            put(tensors, dataNames, open.getData(), "data");
            put(tensors, labelNames, open.getLabels(), "labels");
            return Batch.of(tensors);
        }

        private void closeOpen() {
            if (open != null) {
                open.close();
                open = null;
            }
        }
    }

    static void put(Map<String, Tensor> into, List<String> names, NDList arrays, String what) {
        if (arrays.size() != names.size()) {
            throw new IllegalStateException("the DJL dataset's batches hold " + arrays.size() + " " + what
                    + " arrays but " + names.size() + " names were given (" + names + ")");
        }
        for (int i = 0; i < arrays.size(); i++) {
            NDArray a = arrays.get(i);
            ByteBuffer bytes = a.toByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            into.put(
                    names.get(i),
                    Tensor.of(
                            DjlTypes.fromDjl(a.getDataType()), a.getShape().getShape(), MemorySegment.ofBuffer(bytes)));
        }
    }

    /** Options of a {@link DjlDatasetSource}. */
    public static final class Builder {
        private final Dataset dataset;
        private List<String> dataNames = List.of("data");
        private List<String> labelNames = List.of("label");
        private long samplesPerEpoch;
        private boolean shuffle = true;
        private boolean dropLast;
        private long seed;

        private Builder(Dataset dataset) {
            this.dataset = dataset;
        }

        /** Names of the batch's data arrays, in order (default {@code data}). */
        public Builder dataNames(String... names) {
            this.dataNames = List.of(names);
            return this;
        }

        /** Names of the batch's label arrays, in order (default {@code label}). */
        public Builder labelNames(String... names) {
            this.labelNames = List.of(names);
            return this;
        }

        /** Samples per epoch; needed only for datasets that are not a {@link RandomAccessDataset}. */
        public Builder samplesPerEpoch(long samples) {
            this.samplesPerEpoch = samples;
            return this;
        }

        public DjlDatasetSource build() {
            return new DjlDatasetSource(this);
        }

        /** For {@link #byIndex(int)}: whether epochs are shuffled (default yes). */
        public Builder shuffle(boolean shuffle) {
            this.shuffle = shuffle;
            return this;
        }

        /** For {@link #byIndex(int)}: the seed of the epochs' shuffles (default 0). */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** For {@link #byIndex(int)}: leave each epoch's short last batch out (default no). */
        public Builder dropLast(boolean dropLast) {
            this.dropLast = dropLast;
            return this;
        }

        /**
         * A source that loads the samples of this {@link RandomAccessDataset} by index, in batches of
         * {@code batchSize}, in the order the producer chooses: consumers joining mid-epoch get exact epochs.
         *
         * @throws IllegalArgumentException if the dataset cannot be read by index
         */
        public DjlIndexedSource byIndex(int batchSize) {
            if (!(dataset instanceof RandomAccessDataset r)) {
                throw new IllegalArgumentException("only a RandomAccessDataset can be served by index, not a "
                        + dataset.getClass().getSimpleName() + "; use build() to serve it in its own order");
            }
            return new DjlIndexedSource(r, dataNames, labelNames, batchSize, shuffle, dropLast, seed);
        }
    }
}
