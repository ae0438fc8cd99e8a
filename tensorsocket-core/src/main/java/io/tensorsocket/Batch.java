package io.tensorsocket;

import io.tensorsocket.lease.BatchLeases;
import io.tensorsocket.lease.Lease;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Ordered, named tensors that share a first (batch) dimension, together with where the batch sits in
 * its epoch: the epoch number, the batch's index in the epoch and the sample positions
 * {@code [sampleStart, sampleStart + size)} it covers.
 *
 * <p>A batch received from a {@link TensorConsumer} is a lease on shared memory: it is valid until the
 * consumer is asked for the next batch or until {@link #close()}; any later access throws
 * {@link BatchReleasedException}. Closing is idempotent.
 */
public final class Batch implements AutoCloseable {
    private final Map<String, Tensor> tensors;
    private final long epoch;
    private final long index;
    private final long sampleStart;
    private final int size;
    private final Lease lease;
    private final Runnable onClose;

    static {
        BatchLeases.install(new BatchLeases() {
            @Override
            public Lease lease(Batch batch) {
                return batch.lease;
            }

            @Override
            public void retire(Batch batch) {
                batch.retire();
            }
        });
    }

    Batch(Map<String, Tensor> tensors, long epoch, long index, long sampleStart, Lease lease, Runnable onClose) {
        if (tensors.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one tensor");
        }
        long n = -1;
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            Tensor t = Objects.requireNonNull(e.getValue(), e.getKey());
            if (t.rank() == 0) {
                throw new IllegalArgumentException(
                        "tensor '" + e.getKey() + "' is a scalar; batch tensors need a batch dimension");
            }
            if (n >= 0 && t.dim(0) != n) {
                throw new IllegalArgumentException("tensor '" + e.getKey() + "' has " + t.dim(0)
                        + " entries in its first dimension but the batch's other tensors have " + n);
            }
            n = t.dim(0);
        }
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("batch of " + n + " samples is too large");
        }
        this.tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
        this.epoch = epoch;
        this.index = index;
        this.sampleStart = sampleStart;
        this.size = (int) n;
        this.lease = lease;
        this.onClose = onClose;
    }

    /**
     * A batch of caller-owned tensors, as a loader produces it. Epoch and positions are assigned by the
     * producer; here they are zero.
     */
    public static Batch of(Map<String, Tensor> tensors) {
        return new Batch(tensors, 0, 0, 0, Lease.OWNED, null);
    }

    /**
     * A batch of read-only views into memory lent for a while by its owner (a network receive buffer,
     * say), with its place in the epoch. Like a consumer's batch it is a lease: {@link #close()} runs
     * {@code onClose} once, and every later access to the batch or its tensors throws
     * {@link BatchReleasedException}. The owner keeps {@code data} valid until then.
     *
     * @param specs       the tensors, in order
     * @param data        each tensor's {@code samples} samples, row-major, little-endian
     * @param samples     samples in the batch
     * @param what        how error messages name the batch ("batch 3 of epoch 1")
     * @param onClose     run once when the batch is released; may be null
     */
    public static Batch lent(
            List<TensorSpec> specs,
            List<MemorySegment> data,
            int samples,
            long epoch,
            long index,
            long sampleStart,
            String what,
            Runnable onClose) {
        return lent(specs, data, samples, epoch, index, sampleStart, what, onClose, false);
    }

    /**
     * {@link #lent(List, List, int, long, long, long, String, Runnable)}, confined to the calling thread where
     * {@code confined}, as a consumer's batches are under {@link ConsumerOptions#threadConfinedBatches()}: only this
     * thread may read its views, and releasing it costs no handshake with every thread of the JVM. Released from
     * another thread, its typed accessors refuse at once but its views stay open: the owner must then keep
     * {@code data} readable (it may hold other bytes) until the process ends.
     */
    public static Batch lent(
            List<TensorSpec> specs,
            List<MemorySegment> data,
            int samples,
            long epoch,
            long index,
            long sampleStart,
            String what,
            Runnable onClose,
            boolean confined) {
        if (specs.size() != data.size()) {
            throw new IllegalArgumentException(specs.size() + " tensor specs but " + data.size() + " data segments");
        }
        Lease lease = Lease.open(what, confined);
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (int i = 0; i < specs.size(); i++) {
            TensorSpec s = specs.get(i);
            m.put(
                    s.name(),
                    new Tensor(
                            s.dtype(),
                            s.batchShape(samples),
                            data.get(i).reinterpret(lease.scope(), null).asReadOnly(),
                            lease));
        }
        return new Batch(m, epoch, index, sampleStart, lease, onClose);
    }

    /** A batch of caller-owned tensors given as name/tensor pairs: {@code Batch.of("x", x, "y", y)}. */
    public static Batch of(Object... namesAndTensors) {
        if (namesAndTensors.length % 2 != 0) {
            throw new IllegalArgumentException("pass name, tensor, name, tensor, ...");
        }
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (int i = 0; i < namesAndTensors.length; i += 2) {
            if (!(namesAndTensors[i] instanceof String name) || !(namesAndTensors[i + 1] instanceof Tensor t)) {
                throw new IllegalArgumentException("argument " + i + " must be a name followed by a Tensor");
            }
            if (m.put(name, t) != null) {
                throw new IllegalArgumentException("tensor name '" + name + "' appears twice");
            }
        }
        return of(m);
    }

    /** The tensor called {@code name}. */
    public Tensor tensor(String name) {
        lease.check();
        Tensor t = tensors.get(name);
        if (t == null) {
            throw new NoSuchElementException("no tensor '" + name + "' in this batch; it has " + tensors.keySet());
        }
        return t;
    }

    /** The tensor at position {@code i} in the batch's order. */
    public Tensor tensor(int i) {
        lease.check();
        return List.copyOf(tensors.values()).get(i);
    }

    /** All tensors, in order. */
    public Map<String, Tensor> tensors() {
        lease.check();
        return tensors;
    }

    /** Tensor names, in order. */
    public List<String> names() {
        return List.copyOf(tensors.keySet());
    }

    /** Number of samples (the first dimension). */
    public int size() {
        return size;
    }

    /** Epoch this batch belongs to. */
    public long epoch() {
        return epoch;
    }

    /** Index of this batch within its epoch, from 0. */
    public long index() {
        return index;
    }

    /** Position in the epoch of the batch's first sample. */
    public long sampleStart() {
        return sampleStart;
    }

    /** Position in the epoch just past the batch's last sample. */
    public long sampleEnd() {
        return sampleStart + size;
    }

    /** Whether the batch was released. */
    public boolean isReleased() {
        return lease.isReleased();
    }

    /** Releases the batch: its memory may be reused and its tensors become unreadable. */
    @Override
    public void close() {
        if (lease.release() && onClose != null) {
            onClose.run();
        }
    }

    private void retire() {
        if (lease.release(false) && onClose != null) {
            onClose.run();
        }
    }

    @Override
    public String toString() {
        return "Batch[epoch=" + epoch + ", index=" + index + ", samples=[" + sampleStart + ", " + sampleEnd() + "), "
                + tensors.values() + "]";
    }
}
