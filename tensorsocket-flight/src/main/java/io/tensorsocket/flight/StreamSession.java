package io.tensorsocket.flight;

import io.grpc.Context;
import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerEvictedException;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.RequestRejectedException;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.memory.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One remote consumer's stream. It opens its own local {@link TensorConsumer} on the producer with the
 * remote's batch size, so exactly-once order, any batch size, late joining and leaving come from the
 * local contract unchanged, and the producer counts the remote as one attached consumer. Each local
 * batch is copied once into a recycled send buffer and released at once; Flight hands that buffer to
 * gRPC without copying it again (zero-copy write). A cancelled or
 * broken call closes the local consumer at once; a silent stretch of 0.5 s sends a heartbeat so the
 * client can tell a slow producer from a vanished server.
 */
final class StreamSession {
    private static final Logger LOG = LoggerFactory.getLogger(StreamSession.class);
    static final long HEARTBEAT_NANOS = 500_000_000L;

    private final Path producerDirectory;
    private final StreamRequest request;
    private final ServerStreamListener listener;
    private final BufferAllocator allocator;
    private final ScheduledExecutorService timer;
    private final String peer;
    /** The producer's ids of the consumers of this server's streams, this one's among them while it streams. */
    private final Set<Integer> streaming;

    private int consumerId = -1;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition ready = lock.newCondition();
    private long lastSent = System.nanoTime();
    private volatile boolean cancelled;
    private boolean started;

    StreamSession(
            Path producerDirectory,
            StreamRequest request,
            ServerStreamListener listener,
            BufferAllocator allocator,
            ScheduledExecutorService timer,
            String peer,
            Set<Integer> streaming) {
        this.producerDirectory = producerDirectory;
        this.request = request;
        this.listener = listener;
        this.allocator = allocator;
        this.timer = timer;
        this.peer = peer;
        this.streaming = streaming;
    }

    /**
     * Starts the stream: registers for gRPC's callbacks on the calling thread (the call's handler, where gRPC takes
     * them) and streams on a thread of its own, so that the call's executor is free to deliver them as they come
     * (flow control opening, a cancel) rather than after the stream.
     */
    void start() {
        listener.setOnCancelHandler(this::onCancel);
        Context.current().addListener(ctx -> onCancel(), Runnable::run);
        listener.setOnReadyHandler(this::signalReady);
        Thread.ofPlatform().daemon().name("tensorsocket-flight-stream-" + peer).start(this::run);
    }

    private void run() {
        ConsumerOptions opts = ConsumerOptions.batchSize(request.batchSize())
                .withDropLast(request.dropLast())
                .withBatchTimeout(request.batchTimeout())
                .withStartPolicy(request.startPolicy())
                .withConnectTimeout(Duration.ofSeconds(10))
                .withClient(peer)
                .withThreadConfinedBatches(true); // this thread alone reads and releases them
        ScheduledFuture<?> heartbeat = timer.scheduleAtFixedRate(this::heartbeat, 250, 250, TimeUnit.MILLISECONDS);
        try (TensorConsumer consumer = TensorConsumer.connect(producerDirectory, opts);
                TensorColumns.Outbound out = new TensorColumns.Outbound(
                        allocator,
                        TensorColumns.schema(
                                consumer.tensors(), header(consumer).toMetadata()),
                        consumer.tensors())) {
            LOG.info("remote consumer {} attached (batch size {})", peer, request.batchSize());
            consumerId = consumer.consumerId();
            streaming.add(consumerId);
            send(() -> {
                listener.setUseZeroCopy(true); // safe: the root's buffers are copies this session owns
                listener.start(out.root());
                started = true;
            });
            stream(consumer, out);
            out.clear();
        } catch (CancelledException e) {
            LOG.info("remote consumer {} left", peer);
        } catch (TensorSocketException e) {
            LOG.info("stream to {} ended: {}", peer, e.toString());
            fail(e);
        } catch (RuntimeException | Error e) { // Error too: on this thread nothing else would end the call
            LOG.warn("stream to {} failed", peer, e);
            fail(e);
        } finally {
            heartbeat.cancel(false);
            streaming.remove(consumerId);
        }
    }

    private void stream(TensorConsumer consumer, TensorColumns.Outbound out) {
        for (long e = 0; request.epochs() == 0 || e < request.epochs(); e++) {
            long batches = 0;
            long samples = 0;
            long epoch = consumer.epoch();
            for (Batch b : consumer) {
                RecordTag tag;
                try (b) { // released before sending: the root holds a copy
                    epoch = b.epoch();
                    tag = new RecordTag(
                            RecordTag.Kind.BATCH,
                            b.epoch(),
                            b.index(),
                            b.sampleStart(),
                            consumer.streamPosition(b),
                            b.size());
                    out.load(b); // while gRPC still writes the previous batch
                }
                awaitReady();
                send(() -> {
                    listener.putNext(tag.encode(allocator));
                    out.clear();
                });
                batches++;
                samples += tag.samples();
            }
            if (samples == 0 && consumer.isEndOfStream()) {
                break;
            }
            RecordTag end = new RecordTag(RecordTag.Kind.END_OF_EPOCH, epoch, batches, 0, 0, samples);
            send(() -> listener.putMetadata(end.encode(allocator)));
            if (consumer.isEndOfStream()) {
                break;
            }
        }
        send(() -> {
            listener.putMetadata(new RecordTag(RecordTag.Kind.END_OF_STREAM, 0, 0, 0, 0, 0).encode(allocator));
            listener.completed();
        });
    }

    private StreamHeader header(TensorConsumer c) {
        return new StreamHeader(
                c.samplesPerEpoch(),
                c.batchSize(),
                request.dropLast(),
                c.producerBatchSize(),
                c.startMode(),
                c.startEpoch(),
                c.startSample(),
                c.producerEpochs(),
                c.sourceDescription(),
                c.midEpochStart(),
                c.consumerId());
    }

    private interface Send {
        void run();
    }

    /** Every listener call goes through here: gRPC's stream observer is not thread-safe. */
    private void send(Send action) {
        lock.lock();
        try {
            if (cancelled) {
                throw new CancelledException();
            }
            action.run();
            lastSent = System.nanoTime();
        } finally {
            lock.unlock();
        }
    }

    /** Waits for gRPC's flow control to accept more, so a slow client bounds what is buffered. */
    private void awaitReady() {
        lock.lock();
        try {
            while (!listener.isReady()) {
                if (cancelled) {
                    throw new CancelledException();
                }
                ready.await(100, TimeUnit.MILLISECONDS); // signalled by gRPC's onReady; the bound is a safety net
            }
            if (cancelled) {
                throw new CancelledException();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancelledException();
        } finally {
            lock.unlock();
        }
    }

    private void heartbeat() {
        if (!lock.tryLock()) {
            return; // a send is under way, which is proof of life itself
        }
        try {
            if (started && !cancelled && System.nanoTime() - lastSent >= HEARTBEAT_NANOS && listener.isReady()) {
                listener.putMetadata(RecordTag.heartbeat().encode(allocator));
                lastSent = System.nanoTime();
            }
        } catch (RuntimeException e) {
            LOG.debug("heartbeat to {} failed", peer, e);
        } finally {
            lock.unlock();
        }
    }

    private void signalReady() {
        lock.lock();
        try {
            ready.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void onCancel() {
        cancelled = true;
        signalReady();
    }

    private void fail(Throwable e) {
        if (cancelled) {
            return;
        }
        CallStatus status = switch (e) {
            case ProducerNotFoundException x -> CallStatus.NOT_FOUND;
            case RequestRejectedException x -> CallStatus.INVALID_ARGUMENT;
            case IllegalArgumentException x -> CallStatus.INVALID_ARGUMENT;
            case ConsumerEvictedException x -> CallStatus.RESOURCE_EXHAUSTED;
            case TensorSocketTimeoutException x -> CallStatus.TIMED_OUT;
            case ProducerGoneException x -> CallStatus.UNAVAILABLE;
            case ProducerFailedException x -> CallStatus.INTERNAL;
            default -> CallStatus.INTERNAL;
        };
        String message = e.getClass().getSimpleName() + ": " + e.getMessage();
        lock.lock();
        try {
            listener.error(status.withDescription(message).toRuntimeException());
        } catch (RuntimeException ignored) {
            // the call is already gone
        } finally {
            lock.unlock();
        }
    }

    private static final class CancelledException extends RuntimeException {
        CancelledException() {
            super(null, null, false, false);
        }
    }
}
