package io.tensorsocket.producer;

import io.tensorsocket.BatchSource;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.directory.ShareFiles;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What lies under {@link TensorProducer}'s façade: one assembled producer ({@link ProducerAssembly}) and its
 * lifecycle. It serves its {@link EpochLoop} in one thread (a background one, or the caller's), keeps the
 * loop's failure to report, and on close shuts the core down, waits a bounded time for the source, and removes
 * every file it made. Each method does what the façade's method of the same name documents.
 */
public final class ProducerEngine {
    private static final Logger log = LoggerFactory.getLogger(TensorProducer.class);

    private final String name;
    private final BatchSource source;
    /** The number of the first epoch served (a relay's: its upstream's); see {@link BatchSource#firstEpoch()}. */
    private final long firstEpoch;
    /** The epoch the stream ends before, or 0 for none. */
    private final long epochs;

    private final Duration drainTimeout;
    /** Its directory, arena, rings and socket. */
    private final ProducerParts parts;

    private final ProducerCore core;
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile Thread thread;
    private final String description;
    private final long pid;
    private volatile Throwable failure;
    private volatile boolean closing;
    private volatile long loaderErrors;
    /** The share whose files go with a clean end ({@link ShareFiles}), or null: a share's named producer only. */
    private final String share;

    /** Assembles the producer {@code spec} describes: claims its directory, maps its arena, opens its socket. */
    public ProducerEngine(ProducerSpec spec) throws IOException {
        this.source = spec.source();
        this.name = spec.name();
        this.drainTimeout = spec.drainTimeout();
        this.pid = ProcessHandle.current().pid();
        ProducerAssembly.Assembled made = ProducerAssembly.assemble(spec, pid);
        this.parts = made.parts();
        this.core = made.core();
        this.description = made.description();
        this.firstEpoch = made.firstEpoch();
        this.epochs = made.epochs();
        this.share = spec.shareKey() != null && parts.directory().path().equals(ProducerDirectory.forName(name))
                ? name
                : null;
    }

    public void start() {
        synchronized (this) {
            if (thread != null) {
                throw new IllegalStateException("producer '" + name + "' was already started");
            }
            thread = Thread.ofPlatform().name("tensorsocket-producer-" + name).start(this::loop);
        }
    }

    public void run() {
        synchronized (this) {
            if (thread != null) {
                throw new IllegalStateException("producer '" + name + "' was already started");
            }
            thread = Thread.currentThread();
        }
        loop();
        rethrowFailure();
    }

    public boolean await(Duration timeout) throws InterruptedException {
        if (!finished.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return false;
        }
        rethrowFailure();
        return true;
    }

    private void rethrowFailure() {
        Throwable f = failure;
        if (f instanceof TensorSocketException e) {
            throw e;
        }
        if (f != null) {
            throw new ProducerFailedException("producer '" + name + "' failed: " + f, f);
        }
    }

    private void loop() {
        try {
            EpochLoop.Outcome outcome =
                    new EpochLoop(name, source, core, firstEpoch, epochs, drainTimeout, () -> closing).run();
            failure = outcome.failure();
            loaderErrors = outcome.loaderErrors();
        } finally {
            core.shutdown("finished", null);
            finished.countDown();
        }
    }

    public String name() {
        return name;
    }

    public Path directory() {
        return parts.directory().path();
    }

    public int consumerCount() {
        return core.consumerCount();
    }

    public long batchesPublished() {
        return core.batchesPublished();
    }

    public ProducerStatus status() {
        return core.status(pid, description);
    }

    /** See {@link io.tensorsocket.spi.RelayBoundaries#keep}. */
    public UpstreamBoundaries.Answer keepBoundaryForRelay(int consumerId, long epoch, long sample) {
        return core.keepBoundaryForRelay(consumerId, epoch, sample);
    }

    /** See {@link io.tensorsocket.spi.RelayBoundaries#release}. */
    public void releaseBoundaryForRelay(int consumerId, long sample) {
        core.releaseBoundaryForRelay(consumerId, sample);
    }

    public long loaderErrors() {
        return loaderErrors;
    }

    public boolean isFinished() {
        return finished.getCount() == 0;
    }

    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        core.shutdown(
                "closed", new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, "producer '" + name + "' was closed"));
        parts.closeServer();
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            try {
                if (!finished.await(10, TimeUnit.SECONDS)) {
                    log.warn("the source of producer '{}' did not stop within 10 s; closing the arena under it", name);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            source.close();
        } catch (Exception e) {
            log.warn("closing the source failed: {}", e.toString());
        }
        parts.close();
        if (share != null && isFinished() && failure == null) {
            ShareFiles.removeUnused(share); // after the directory's lock went with parts.close()
        }
    }
}
