package io.tensorsocket.producer;

import io.tensorsocket.BatchSource;
import io.tensorsocket.IndexedSource;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.SourceStoppedException;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.EpochOrders;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A producer's serving loop: the source emits each epoch into the core, the stream ends, the consumers are
 * given the drain timeout to finish. What ends it early becomes the producer's outcome and, for its
 * consumers, the matching error: a source that stops (at an epoch boundary the stream just ends; mid-epoch
 * the producer stops), a loader that throws (LOADER_FAILED, with the loader's own message and, in the log,
 * its stack trace), no consumer within the idle timeout, or the producer being closed.
 *
 * <p>For an {@link IndexedSource} the loop chooses each epoch's order ({@link EpochOrders}) when the epoch begins,
 * from the boundaries of the exact consumers attached then, so that their epochs stay one pass each.
 */
final class EpochLoop {
    private static final Logger log = LoggerFactory.getLogger(TensorProducer.class);

    /** How the loop ended: the failure to report (null for a clean end) and how many times the loader threw. */
    record Outcome(Throwable failure, long loaderErrors) {}

    private final String name;
    private final BatchSource source;
    private final ProducerCore core;
    private final long firstEpoch;
    private final long epochs;
    private final Duration drainTimeout;
    private final BooleanSupplier closing;

    /** Serves epochs {@code firstEpoch} up to (not including) {@code epochs}, or without end for 0. */
    EpochLoop(
            String name,
            BatchSource source,
            ProducerCore core,
            long firstEpoch,
            long epochs,
            Duration drainTimeout,
            BooleanSupplier closing) {
        this.name = name;
        this.source = source;
        this.core = core;
        this.firstEpoch = firstEpoch;
        this.epochs = epochs;
        this.drainTimeout = drainTimeout;
        this.closing = closing;
    }

    Outcome run() {
        long epoch = firstEpoch;
        IndexedSource indexed = source.byIndex();
        EpochOrders orders = indexed == null
                ? null
                : new EpochOrders(
                        indexed.datasetSize(), indexed.samplesPerEpoch(), indexed.shuffles(), indexed::shuffleRandom);
        try {
            for (; epochs == 0 || epoch < epochs; epoch++) {
                long publishedBefore = core.batchesPublished();
                try {
                    if (indexed != null) {
                        int[] boundaries = core.lateJoinBoundaries(epoch);
                        int[] order = orders.draw(epoch, boundaries);
                        core.drew(epoch, order, boundaries);
                        indexed.emitEpoch(epoch, order, core);
                    } else {
                        source.emitEpoch(epoch, core);
                    }
                } catch (SourceStoppedException e) {
                    if (e.now() || core.batchesPublished() != publishedBefore) {
                        throw new SourceStopped(e.getMessage());
                    }
                    log.info(
                            "producer '{}': {}; the stream ends after {} epochs",
                            name,
                            e.getMessage(),
                            epoch - firstEpoch);
                    break;
                } catch (ProducerStopped | TensorSocketTimeoutException e) {
                    throw e;
                } catch (Throwable t) {
                    throw new LoaderFailure(epoch, t);
                }
                core.endEpoch(epoch);
            }
            if (indexed != null && epochs > 0 && epoch == epochs) {
                serveTails(epoch, indexed, orders);
            }
            core.endStream(epoch);
            log.info(
                    "producer '{}' finished {} epochs; waiting up to {} s for consumers to finish",
                    name,
                    epoch - firstEpoch,
                    drainTimeout.toSeconds());
            core.awaitConsumersGone(drainTimeout);
            return new Outcome(null, 0);
        } catch (ProducerIdleEnd e) {
            log.info(e.getMessage());
            core.shutdown("ended", new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, e.getMessage()));
            return new Outcome(null, 0);
        } catch (ProducerStopped e) {
            return new Outcome(
                    closing.getAsBoolean()
                            ? null
                            : new ProducerGoneException("producer '" + name + "' stopped: " + e.getMessage()),
                    0);
        } catch (SourceStopped e) {
            String msg = "producer '" + name + "' stopped: " + e.getMessage();
            log.info(msg);
            core.shutdown("stopped", new Message.Error(Message.ErrorCode.PRODUCER_CLOSED, msg));
            return new Outcome(new ProducerGoneException(msg), 0);
        } catch (LoaderFailure e) {
            // A failure this project reports (a feeder's) says all in its message; a loader's own exception
            // keeps its stack trace in the log.
            boolean reported = e.getCause() instanceof TensorSocketException;
            String msg = "the loader of producer '" + name + "' failed in epoch " + e.epoch + ": "
                    + (reported ? e.getCause().getMessage() : e.getCause());
            if (reported) {
                log.error(msg);
            } else {
                log.error(msg, e.getCause());
            }
            core.shutdown("loader failed", new Message.Error(Message.ErrorCode.LOADER_FAILED, msg));
            return new Outcome(new ProducerFailedException(msg, e.getCause()), 1);
        } catch (TensorSocketTimeoutException e) {
            log.warn(e.getMessage());
            return new Outcome(e, 0);
        } catch (RuntimeException | Error e) {
            String msg = "producer '" + name + "' failed: " + e;
            log.error(msg, e);
            core.shutdown("failed", new Message.Error(Message.ErrorCode.LOADER_FAILED, msg));
            return new Outcome(new ProducerFailedException(msg, e), 0);
        }
    }

    /**
     * The stream published its {@code end} epochs: the consumers that joined mid-epoch are owed the rest of their last
     * epochs ({@link Tails}), the first samples of epoch {@code end}'s order, which the main stream loads for its own
     * consumers (lanes for theirs). A source that fails to load them fails no one's finished epochs: those consumers
     * are told what their last epoch lacks.
     */
    private void serveTails(long end, IndexedSource indexed, EpochOrders orders) {
        Tails.Owed owed = core.owedTails(end);
        int[] boundaries = owed.any() > 0 ? core.lateJoinBoundaries(end) : new int[0];
        int[] order = owed.any() > 0 ? orders.draw(end, boundaries) : null;
        int main = core.tailsDrawn(end, order, boundaries);
        if (main == 0) {
            return;
        }
        log.info(
                "producer '{}' published its {} epochs; it loads the first {} samples of the next epoch's order again,"
                        + " by index, for the consumers that joined mid-epoch: their last epochs end whole",
                name,
                end - firstEpoch,
                main);
        try {
            indexed.emitEpoch(end, Arrays.copyOf(order, main), core);
        } catch (ProducerStopped e) {
            throw e;
        } catch (Exception e) {
            log.warn(
                    "producer '{}' could not load the rest of the last epoch of the consumers that joined mid-epoch"
                            + " ({}); they are told how many samples it lacks",
                    name,
                    e.toString());
        }
    }

    /** The source stopped the stream in the middle of an epoch (see {@link SourceStoppedException}). */
    private static final class SourceStopped extends RuntimeException {
        SourceStopped(String message) {
            super(message, null, false, false);
        }
    }

    private static final class LoaderFailure extends RuntimeException {
        final long epoch;

        LoaderFailure(long epoch, Throwable cause) {
            super(cause);
            this.epoch = epoch;
        }
    }
}
