package io.tensorsocket.consumer;

import io.tensorsocket.ConsumerEvictedException;
import io.tensorsocket.JobFailedException;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerNotRespondingException;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.RequestRejectedException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.protocol.Message;
import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * How a consumer's link reports what went wrong with its producer: each failure as the exception its user
 * can act on, naming the producer (and its pid, once known) and saying what to do.
 */
final class LinkFailures {
    private final String producer;
    private volatile long producerPid = -1;

    LinkFailures(String producer) {
        this.producer = producer;
    }

    void producerPid(long pid) {
        this.producerPid = pid;
    }

    ProducerGoneException lostConnection(IOException cause) {
        return new ProducerGoneException(
                "lost the connection to producer '" + producer + "'"
                        + (producerPid > 0 ? " (pid " + producerPid + ")" : "") + ": it exited or was killed"
                        + (cause != null ? " (" + cause.getMessage() + ")" : "") + "; restart it and connect again",
                cause);
    }

    ConsumerEvictedException detached(String detail) {
        return new ConsumerEvictedException(
                "producer '" + producer + "'" + (producerPid > 0 ? " (pid " + producerPid + ")" : "")
                        + " let this consumer go without saying why (" + detail
                        + "); it evicts a consumer that holds a batch"
                        + " longer than its stall timeout: read faster or ask for a longer --stall-timeout-s, and connect again");
    }

    ProducerNotRespondingException notResponding(long silenceNanos, String awaited) {
        return new ProducerNotRespondingException("producer '" + producer + "'"
                + (producerPid > 0 ? " (pid " + producerPid + ")" : "") + " is not responding: nothing arrived from it,"
                + " not even its once-a-second heartbeat, for " + TimeUnit.NANOSECONDS.toMillis(silenceNanos)
                + " ms while this consumer waited for " + awaited + ". Its process is alive but stopped (SIGSTOP,"
                + " Ctrl-Z, a debugger) or deadlocked; resume it (kill -CONT "
                + (producerPid > 0 ? producerPid : "<pid>")
                + ") or restart it. A slow loader does not cause this; raise the consumer's liveness timeout"
                + " (--liveness-s) if the producer's machine is badly overloaded");
    }

    TensorSocketException fromError(Message.Error e) {
        String m = e.message().contains("producer '") ? e.message() : "producer '" + producer + "': " + e.message();
        return switch (e.code()) {
            case VERSION_MISMATCH -> new ProtocolVersionException(m);
            case BAD_FRAME -> new ProtocolException(m);
            case BAD_REQUEST -> new RequestRejectedException(m);
            case EVICTED -> new ConsumerEvictedException(m);
            case LOADER_FAILED -> new ProducerFailedException(m);
            case PRODUCER_CLOSED, STOPPED -> new ProducerGoneException(m);
            case JOB_FAILED -> new JobFailedException(m);
            case INTERNAL -> new TensorSocketException(m);
        };
    }

    TensorSocketTimeoutException timeout(long timeoutNanos, String awaited) {
        return new TensorSocketTimeoutException("waited " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms for "
                + awaited + " from producer '" + producer + "'; the producer is alive but sent nothing (a slow loader,"
                + " or a stalled peer holding everyone up); raise the consumer's timeout if that is expected");
    }
}
