package io.tensorsocket.consumer;

import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.arena.ProducerDirectory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Finds a producer's control socket in its directory and connects to it, turning every way that can fail
 * (no such producer, another user's, a leftover of one that died, an external producer still waiting for
 * its feeder) into an exception that says what to do.
 */
public final class ProducerSocket {
    private ProducerSocket() {
    }

    /** Connects to the producer called {@code name} whose directory is {@code dir}. */
    public static SocketChannel connect(Path dir, String name, Duration connectTimeout) {
        try {
            Files.readAttributes(dir, java.nio.file.attribute.BasicFileAttributes.class);
        } catch (java.nio.file.AccessDeniedException e) {
            throw new PermissionDeniedException("not allowed to reach producer '" + name + "' (" + dir + "): a directory on"
                    + " the way belongs to another user and is not shared with you; ask its owner to start the producer"
                    + " with --group <a group you are in>");
        } catch (IOException e) {
            // missing: reported just below
        }
        if (!Files.isDirectory(dir)) {
            throw new ProducerNotFoundException("no producer named '" + name + "' (no directory " + dir + "); running: "
                    + ProducerDirectory.liveProducers() + ". Start one with: tensorsocket serve --name " + name + " ...");
        }
        try {
            ProducerDirectory.checkAccessibleToCurrentUser(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Path socket = dir.resolve(ProducerDirectory.SOCKET_FILE);
        awaitFeeder(dir, socket, name, connectTimeout);
        SocketChannel ch;
        try {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            ch.connect(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            closeQuietly(ch);
            throw connectFailure(name, dir, socket, e);
        }
        return ch;
    }

    /**
     * An external producer opens its control socket only once its feeder has declared the batches; a consumer
     * that comes first waits for that, up to its connect timeout, instead of finding no producer.
     */
    private static void awaitFeeder(Path dir, Path socket, String name, Duration timeout) {
        Path feeder = dir.resolve(ProducerDirectory.FEEDER_SOCKET_FILE);
        if (Files.exists(socket) || !Files.exists(feeder)) {
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!Files.exists(socket)) {
            if (!Files.exists(feeder)) {
                return; // the producer went away: connecting says so
            }
            if (System.nanoTime() - deadline > 0) {
                throw new TensorSocketTimeoutException("producer '" + name + "' is still waiting for its feeder after "
                        + timeout.toMillis() + " ms: it serves batches from an external loader that has not connected yet;"
                        + " start one (python3 -m tensorsocket_client feed --name " + name + " ..., or"
                        + " tensorsocket_client.TensorProducer(\"" + name + "\", loader)) or connect with a longer timeout");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TensorSocketTimeoutException("interrupted while waiting for the feeder of producer '" + name + "'");
            }
        }
    }

    private static TensorSocketException connectFailure(String name, Path dir, Path socket, IOException e) {
        String msg = String.valueOf(e.getMessage());
        if (msg.contains("Permission denied")) {
            return new PermissionDeniedException("not allowed to connect to producer '" + name + "' (" + socket
                    + "); it belongs to another user or its permissions exclude you");
        }
        if (e instanceof ConnectException || e instanceof SocketException) {
            if (!Files.exists(socket)) {
                return new ProducerNotFoundException("no producer is running in " + dir + " (no control socket); running: "
                        + ProducerDirectory.liveProducers() + ". Start one with: tensorsocket serve --name " + name + " ...");
            }
            return new ProducerNotFoundException("producer '" + name + "' is not running (" + socket + " is left over from a"
                    + " producer that died); start it again, or remove the leftovers with: tensorsocket clean");
        }
        return new ProducerNotFoundException("could not connect to producer '" + name + "' at " + socket + ": " + msg);
    }

    private static void closeQuietly(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing to report about a socket that never connected
        }
    }
}
