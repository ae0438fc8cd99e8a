package io.tensorsocket.consumer;

import io.tensorsocket.ConsumerEvictedException;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.ProtocolVersionException;
import io.tensorsocket.RequestRejectedException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;

import java.io.IOException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A consumer's connection to its producer. A receiver thread reads every message as it arrives, so the
 * death of the producer or an error it sends is known at once, even while the consumer is busy training;
 * the iterating thread takes messages in order with a bounded wait.
 */
public final class ConsumerLink implements AutoCloseable {
    private static final Message WAKE = new Message.Bye();

    private final MessageChannel channel;
    private final String producer;
    private final LinkedBlockingQueue<Message> inbox = new LinkedBlockingQueue<>();
    private final Thread receiver;
    private volatile TensorSocketException failure;
    private volatile boolean streamEnded;
    private volatile boolean closing;
    private volatile long producerPid = -1;

    public ConsumerLink(MessageChannel channel, String producer) {
        this.channel = channel;
        this.producer = producer;
        this.receiver = Thread.ofPlatform().daemon().name("tensorsocket-consumer-rx").start(this::receive);
    }

    private void receive() {
        try {
            while (true) {
                Message m = channel.read();
                if (m == null) {
                    if (!streamEnded) {
                        fail(lostConnection(null));
                    }
                    return;
                }
                if (m instanceof Message.Error e) {
                    fail(toException(e));
                    return;
                }
                if (m instanceof Message.EndOfStream) {
                    streamEnded = true;
                }
                inbox.add(m);
            }
        } catch (ProtocolException | ProtocolVersionException e) {
            fail(e);
        } catch (IOException e) {
            if (!streamEnded) {
                fail(lostConnection(e));
            }
        }
    }

    private ProducerGoneException lostConnection(IOException cause) {
        return new ProducerGoneException("lost the connection to producer '" + producer + "'"
                + (producerPid > 0 ? " (pid " + producerPid + ")" : "") + ": it exited or was killed"
                + (cause != null ? " (" + cause.getMessage() + ")" : "") + "; restart it and connect again", cause);
    }

    private void fail(TensorSocketException e) {
        if (failure == null && !closing) {
            failure = e;
        }
        inbox.add(WAKE);
    }

    private TensorSocketException toException(Message.Error e) {
        String m = e.message().contains("producer '") ? e.message() : "producer '" + producer + "': " + e.message();
        return switch (e.code()) {
            case VERSION_MISMATCH -> new ProtocolVersionException(m);
            case BAD_FRAME -> new ProtocolException(m);
            case BAD_REQUEST -> new RequestRejectedException(m);
            case EVICTED -> new ConsumerEvictedException(m);
            case LOADER_FAILED -> new ProducerFailedException(m);
            case PRODUCER_CLOSED -> new ProducerGoneException(m);
            case INTERNAL -> new TensorSocketException(m);
        };
    }

    public void producerPid(long pid) {
        this.producerPid = pid;
    }

    /** Throws the failure the receiver saw, if any. */
    public void check() {
        TensorSocketException f = failure;
        if (f != null) {
            throw f;
        }
    }

    /**
     * The next message, waiting at most {@code timeoutNanos}.
     *
     * @throws TensorSocketTimeoutException saying what was awaited
     */
    public Message take(long timeoutNanos, String awaited) {
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            check();
            long left = deadline - System.nanoTime();
            Message m;
            try {
                m = left > 0 ? inbox.poll(left, TimeUnit.NANOSECONDS) : inbox.poll();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TensorSocketException("interrupted while waiting for " + awaited, e);
            }
            if (m == WAKE) {
                continue;
            }
            if (m != null) {
                return m;
            }
            check();
            throw new TensorSocketTimeoutException("waited " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms for "
                    + awaited + " from producer '" + producer + "'; the producer is alive but sent nothing (a slow loader,"
                    + " or a stalled peer holding everyone up); raise the consumer's timeout if that is expected");
        }
    }

    /** The next message if one is waiting, else null. */
    public Message poll() {
        check();
        Message m;
        while ((m = inbox.poll()) == WAKE) {
            check();
        }
        return m;
    }

    /** Whether the producer said the stream is over. */
    public boolean streamEnded() {
        return streamEnded;
    }

    public void send(Message m) {
        if (streamEnded) {
            channel.sendQuietly(m); // the producer may already be gone after a finished stream
            return;
        }
        try {
            channel.send(m);
        } catch (IOException e) {
            check();
            fail(lostConnection(e));
            check();
        }
    }

    /** Sends a message whose loss does not matter (a progress report): a broken connection is reported elsewhere. */
    public void sendQuietly(Message m) {
        channel.sendQuietly(m);
    }

    /** Gives the receiver up to {@code millis} to read what the producer sent before it closed the connection. */
    public void awaitReceiverEnd(long millis) {
        try {
            receiver.join(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closing = true;
        channel.sendQuietly(new Message.Bye());
        channel.close();
        try {
            receiver.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
