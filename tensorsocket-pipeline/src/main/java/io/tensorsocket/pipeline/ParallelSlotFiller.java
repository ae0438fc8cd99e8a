package io.tensorsocket.pipeline;

import io.tensorsocket.BatchSink;
import io.tensorsocket.SlotWriter;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fills claimed arena slots with samples on a fixed pool of worker threads. The calling thread claims
 * slots in sampler order, hands each sample to the pool, and publishes each batch once all its samples
 * are written; at most {@code prefetch} claims are outstanding (fewer if the sink allows fewer), so workers start on the next batch while
 * the current one finishes. Each worker thread keeps one context (decoder, buffers) for its lifetime.
 *
 * @param <C> per-thread state of the sample writer; closed with the filler if it is {@link AutoCloseable}
 */
final class ParallelSlotFiller<C> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ParallelSlotFiller.class);
    private static final AtomicInteger POOLS = new AtomicInteger();

    /** Writes one sample into a slot; called concurrently from the worker threads. */
    interface SampleWriter<C> {
        /** State for one worker thread, created on that thread at its first sample. */
        C newContext();

        /** Writes sample {@code sampleId} (augmented for {@code epoch}) as sample {@code index} of {@code slot}. */
        void write(C context, long epoch, int sampleId, SlotWriter slot, int index) throws Exception;

        /** Names the sample in error messages, for example by its file. */
        String describe(int sampleId);

        /** What a user should do about a sample that fails to load. */
        String hint();
    }

    private final SampleWriter<C> writer;
    private final int prefetch;
    private final ExecutorService pool;
    private final Queue<C> contexts = new ConcurrentLinkedQueue<>();
    private final ThreadLocal<C> context;

    ParallelSlotFiller(SampleWriter<C> writer, int workers, int prefetch) {
        if (workers < 1) {
            throw new IllegalArgumentException("need at least 1 worker thread, got " + workers);
        }
        if (prefetch < 1) {
            throw new IllegalArgumentException("prefetch must be at least 1 batch, got " + prefetch);
        }
        this.writer = writer;
        this.prefetch = prefetch;
        int id = POOLS.incrementAndGet();
        this.pool = Executors.newFixedThreadPool(
                workers,
                Thread.ofPlatform()
                        .daemon(true)
                        .name("tensorsocket-pipeline-" + id + "-worker-", 0)
                        .factory());
        this.context = ThreadLocal.withInitial(() -> {
            C c = writer.newContext();
            contexts.add(c);
            return c;
        });
    }

    /**
     * Emits the samples {@code order} in batches of {@code batchSize} into {@code sink}, in order.
     *
     * @throws SampleLoadException naming the first sample that failed; by then no worker touches any
     *                             slot of this call any more
     */
    void emit(long epoch, int[] order, int batchSize, BatchSink sink) throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        ArrayDeque<PendingBatch> pending = new ArrayDeque<>();
        int ahead = Math.max(1, Math.min(prefetch, sink.claimsAhead()));
        try {
            for (int start = 0; start < order.length; start += batchSize) {
                while (pending.size() >= ahead) {
                    finish(pending.removeFirst(), failure);
                }
                int n = Math.min(batchSize, order.length - start);
                PendingBatch batch = new PendingBatch(sink.claim(), n);
                pending.addLast(batch);
                submit(batch, epoch, order, start, failure);
            }
            while (!pending.isEmpty()) {
                finish(pending.removeFirst(), failure);
            }
        } catch (Throwable t) {
            // Stop the workers and wait until none of them can still write into a claimed slot.
            failure.compareAndSet(null, t);
            for (PendingBatch b : pending) {
                b.done.join();
            }
            if (t instanceof InterruptedException) { // get() cleared the flag; whoever called us should see it
                Thread.currentThread().interrupt();
            }
            throw t;
        }
    }

    private void submit(PendingBatch batch, long epoch, int[] order, int start, AtomicReference<Throwable> failure) {
        for (int i = 0; i < batch.samples; i++) {
            int index = i;
            int sampleId = order[start + i];
            try {
                pool.execute(() -> writeOne(batch, epoch, sampleId, index, failure));
            } catch (RejectedExecutionException e) {
                for (int j = i; j < batch.samples; j++) {
                    batch.countDown();
                }
                throw new IllegalStateException("the pipeline source is closed; create a new one", e);
            }
        }
    }

    private void writeOne(PendingBatch batch, long epoch, int sampleId, int index, AtomicReference<Throwable> failure) {
        try {
            if (failure.get() == null) {
                writer.write(context.get(), epoch, sampleId, batch.slot, index);
            }
        } catch (Throwable t) {
            failure.compareAndSet(
                    null,
                    t instanceof Error e
                            ? e
                            : new SampleLoadException(
                                    sampleId,
                                    "cannot load sample " + sampleId + " (" + writer.describe(sampleId) + "): "
                                            + t.getMessage() + "; " + writer.hint(),
                                    t));
        } finally {
            batch.countDown();
        }
    }

    private static void finish(PendingBatch batch, AtomicReference<Throwable> failure) throws Exception {
        try {
            batch.done.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        Throwable t = failure.get();
        if (t instanceof Exception e) {
            throw e;
        }
        if (t != null) {
            throw (Error) t;
        }
        batch.slot.publish(batch.samples);
    }

    @Override
    public void close() {
        pool.close(); // waits for running samples; none are queued once emit has returned
        C c;
        while ((c = contexts.poll()) != null) {
            try {
                if (c instanceof AutoCloseable closeable) {
                    closeable.close();
                }
            } catch (Exception e) {
                LOG.warn("closing a pipeline worker's buffers failed: {}", e.toString());
            }
        }
    }

    /** A claimed slot whose samples are being written. */
    private static final class PendingBatch {
        final SlotWriter slot;
        final int samples;
        final AtomicInteger remaining;
        final CompletableFuture<Void> done = new CompletableFuture<>();

        PendingBatch(SlotWriter slot, int samples) {
            this.slot = slot;
            this.samples = samples;
            this.remaining = new AtomicInteger(samples);
        }

        void countDown() {
            if (remaining.decrementAndGet() == 0) {
                done.complete(null);
            }
        }
    }
}
