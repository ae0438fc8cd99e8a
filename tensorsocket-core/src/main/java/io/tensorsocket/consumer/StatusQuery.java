package io.tensorsocket.consumer;

import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The client side of a status request: connects to a producer's control socket, sends STATUS_REQUEST
 * and reads the one STATUS answer, within a time-out. {@link ProducerStatus#query(Path, Duration)} is
 * the public way to call it.
 */
public final class StatusQuery {
    private StatusQuery() {}

    /**
     * Asks the producer in {@code dir} for its status.
     *
     * @throws ProducerNotFoundException    if no producer is running there
     * @throws TensorSocketTimeoutException if it does not answer within {@code timeout}
     */
    public static ProducerStatus query(Path dir, Duration timeout) {
        Path socket = dir.resolve(ProducerDirectory.SOCKET_FILE);
        if (!Files.exists(socket)) {
            throw new ProducerNotFoundException("no producer is running in " + dir + " (no control socket); running: "
                    + ProducerDirectory.liveProducers());
        }
        // A blocking socket channel has no read time-out: a timer closes the channel, and the flag (set
        // before the close, read after the read failed) tells a time-out from a producer that went away.
        AtomicBoolean timedOut = new AtomicBoolean();
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tensorsocket-status-timeout");
            t.setDaemon(true);
            return t;
        });
        try (MessageChannel ch = new MessageChannel(SocketChannel.open(StandardProtocolFamily.UNIX))) {
            try {
                ch.channel().connect(UnixDomainSocketAddress.of(socket));
            } catch (IOException e) {
                if (String.valueOf(e.getMessage()).contains("Permission denied")) {
                    throw new PermissionDeniedException(
                            "not allowed to connect to " + socket + ": it belongs to another user");
                }
                throw new ProducerNotFoundException("no producer answers at " + socket + " (" + e.getMessage()
                        + "); it may have died: tensorsocket clean removes its leftovers");
            }
            timer.schedule(
                    () -> {
                        timedOut.set(true);
                        ch.close();
                    },
                    timeout.toMillis(),
                    TimeUnit.MILLISECONDS);
            try {
                ch.send(new Message.StatusRequest());
                Message m = ch.read();
                return switch (m) {
                    case Message.Status s -> s.status();
                    case Message.Error e ->
                        throw new TensorSocketException(
                                "producer in " + dir + " refused the status request: " + e.message());
                    case null ->
                        throw new ProducerGoneException("the producer in " + dir + " closed the connection without"
                                + " answering the status request");
                    default ->
                        throw new ProtocolException("the producer in " + dir + " answered a status request with "
                                + m.getClass().getSimpleName());
                };
            } catch (IOException e) {
                if (timedOut.get()) {
                    throw new TensorSocketTimeoutException("the producer in " + dir
                            + " did not answer a status request within " + timeout.toMillis() + " ms");
                }
                throw new ProducerGoneException(
                        "lost the connection to the producer in " + dir + ": " + e.getMessage(), e);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            timer.shutdownNow();
        }
    }
}
