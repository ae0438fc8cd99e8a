package io.tensorsocket.producer;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.LongFunction;

/**
 * Adapts any loader that yields {@link Batch}es per epoch. Each batch is copied once into the arena.
 * The layout comes from the first batch of epoch 0, which is kept and emitted first, so a loader that
 * can be iterated only once still loses nothing.
 */
public final class IterableSource implements BatchSource {
    private final LongFunction<? extends Iterable<Batch>> epochs;
    private final long samplesPerEpoch;
    private BatchLayout layout;
    private Iterator<Batch> peekedIterator;
    private Batch peeked;

    /** A source over {@code epochs}: the loader of each epoch, {@code samplesPerEpoch} samples long. */
    public IterableSource(LongFunction<? extends Iterable<Batch>> epochs, long samplesPerEpoch) {
        if (samplesPerEpoch < 1) {
            throw new IllegalArgumentException("samplesPerEpoch must be at least 1, got " + samplesPerEpoch);
        }
        this.epochs = epochs;
        this.samplesPerEpoch = samplesPerEpoch;
    }

    @Override
    public synchronized BatchLayout layout() {
        if (layout == null) {
            peekedIterator = epochs.apply(0).iterator();
            if (!peekedIterator.hasNext()) {
                throw new NoSuchElementException("the loader yielded no batch in epoch 0; nothing to serve");
            }
            peeked = peekedIterator.next();
            layout = BatchLayout.of(peeked);
        }
        return layout;
    }

    @Override
    public long samplesPerEpoch() {
        return samplesPerEpoch;
    }

    @Override
    public void emitEpoch(long epoch, BatchSink sink) {
        layout();
        Iterator<Batch> it;
        synchronized (this) {
            if (peeked != null && epoch == 0) {
                sink.put(peeked);
                it = peekedIterator;
            } else {
                it = epochs.apply(epoch).iterator();
            }
            peeked = null;
            peekedIterator = null;
        }
        while (it.hasNext()) {
            sink.put(it.next());
        }
    }

    @Override
    public String description() {
        return "iterable";
    }
}
