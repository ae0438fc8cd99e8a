package io.tensorsocket.consumer;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerFailedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.directory.DirectoryAccess;
import io.tensorsocket.directory.ProducerDirectory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds a producer's control socket in its directory and connects to it, waiting up to the consumer's
 * connect timeout for a producer that is not there yet, and turning every way that can fail (no such
 * producer, another user's, a leftover of one that died, an external producer still waiting for its
 * feeder) into an exception that says what to do and what it waited for.
 *
 * <p>Jobs are launched together (a feeder and three trainers in the same second), so a consumer that
 * arrives before its producer waits for it: for the directory to appear, for a starting producer to open
 * its socket, for an external producer's feeder to declare the batches, for a producer that replaces one
 * that died to reclaim the directory. After {@link ConsumerOptions#WAIT_NOTICE_AFTER} it says once, at
 * INFO, what it waits for. Access problems are reported at once: waiting does not mend them.
 */
public final class ProducerSocket {
    private static final Logger log = LoggerFactory.getLogger(ProducerSocket.class);
    private static final long POLL_MILLIS = 20;
    private static final String AWAITS_FEEDER = "it waits for its feeder to declare the batches";

    private ProducerSocket() {}

    /** Connects to the producer called {@code name} whose directory is {@code dir}, waiting up to {@code connectTimeout}. */
    public static SocketChannel connect(Path dir, String name, Duration connectTimeout) {
        long started = System.nanoTime();
        long deadline = started + connectTimeout.toNanos();
        boolean announced = false;
        boolean awaitedFeeder = false;
        while (true) {
            Attempt a = attempt(dir, name);
            if (isAwaitingFeeder(a)) {
                awaitedFeeder = true;
            } else if (awaitedFeeder && !Files.isDirectory(dir)) {
                throw new ProducerGoneException(
                        "producer '" + name + "' went away before it served anything: it was"
                                + " waiting for its feeder, which failed or stopped before declaring its batches (its output says why)");
            }
            if (a.channel() != null) {
                if (announced) {
                    log.info(
                            "producer '{}' is there after {} ms; connected",
                            name,
                            (System.nanoTime() - started) / 1_000_000);
                }
                return a.channel();
            }
            long now = System.nanoTime();
            if (now - deadline >= 0) {
                throw a.notYet()
                        .apply(" within " + millis(connectTimeout) + " (the consumer's connect timeout; raise it"
                                + " to wait longer)");
            }
            if (!announced && now - started >= ConsumerOptions.WAIT_NOTICE_AFTER.toNanos()) {
                log.info(
                        "waiting for producer '{}' to appear: {}; running: {}; waiting up to {} in all",
                        name,
                        a.state(),
                        ProducerDirectory.liveProducers(),
                        millis(connectTimeout));
                announced = true;
            }
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TensorSocketTimeoutException(
                        "interrupted while waiting for producer '" + name + "' (" + a.state() + ")");
            }
        }
    }

    /**
     * One look: a connected channel, or what the producer's directory shows now ({@code state}, for the progress
     * line) and the exception to throw if that is still so at the deadline ({@code notYet}, given how long was
     * waited).
     */
    private record Attempt(SocketChannel channel, String state, Function<String, TensorSocketException> notYet) {
        static Attempt connected(SocketChannel ch) {
            return new Attempt(ch, null, null);
        }
    }

    private static Attempt attempt(Path dir, String name) {
        try {
            Files.readAttributes(dir, BasicFileAttributes.class);
        } catch (AccessDeniedException e) {
            throw new PermissionDeniedException(
                    "not allowed to reach producer '" + name + "' (" + dir + "): a directory on"
                            + " the way belongs to another user and is not shared with you; ask its owner to start the producer"
                            + " with --group <a group you are in>");
        } catch (IOException e) {
            // missing: below
        }
        if (!Files.isDirectory(dir)) {
            return new Attempt(
                    null,
                    "no directory " + dir + " yet",
                    within ->
                            new ProducerNotFoundException("no producer named '" + name + "' appeared" + within + " (no"
                                    + " directory " + dir + "); running: " + ProducerDirectory.liveProducers()
                                    + ". Start one with:"
                                    + " tensorsocket serve --name " + name + " ..., or feed one from Python:"
                                    + " tensorsocket_client.TensorProducer(\"" + name + "\", loader)"));
        }
        String failed = ProducerDirectory.failureBeforeServing(dir);
        if (failed != null) {
            throw new ProducerFailedException("producer '" + name + "' failed before it served: " + failed);
        }
        try {
            DirectoryAccess.checkAccessibleToCurrentUser(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Path socket = dir.resolve(ProducerDirectory.SOCKET_FILE);
        if (!Files.exists(socket)) {
            if (Files.exists(dir.resolve(ProducerDirectory.FEEDER_SOCKET_FILE))) {
                return new Attempt(
                        null,
                        AWAITS_FEEDER,
                        within -> new TensorSocketTimeoutException("producer '" + name + "' was still waiting for its"
                                + " feeder" + within
                                + ": it serves batches from an external loader that has not connected"
                                + " yet; start one (python3 -m tensorsocket_client feed --name " + name + " ..., or"
                                + " tensorsocket_client.TensorProducer(\"" + name + "\", loader))"));
            }
            return new Attempt(
                    null,
                    "its directory " + dir + " exists but its control socket does not yet (starting)",
                    within -> new ProducerNotFoundException("no producer is running in " + dir + ": no control socket"
                            + " appeared" + within + "; running: " + ProducerDirectory.liveProducers()
                            + ". Start one with:"
                            + " tensorsocket serve --name " + name + " ..."));
        }
        SocketChannel ch;
        try {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            ch.connect(UnixDomainSocketAddress.of(socket));
            return Attempt.connected(ch);
        } catch (IOException e) {
            closeQuietly(ch);
            if (String.valueOf(e.getMessage()).contains("Permission denied")) {
                throw new PermissionDeniedException("not allowed to connect to producer '" + name + "' (" + socket
                        + "); it belongs to another user or its permissions exclude you");
            }
            // A socket nobody answers: a producer that died (a new one may be reclaiming the directory) or one
            // that is still starting. Either may change while the consumer waits.
            return new Attempt(
                    null,
                    ProducerDirectory.isLocked(dir)
                            ? "it is starting"
                            : socket + " is left over from a" + " producer that died",
                    within -> connectFailure(name, dir, socket, e, within));
        }
    }

    private static String millis(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms";
    }

    private static TensorSocketException connectFailure(
            String name, Path dir, Path socket, IOException e, String within) {
        if (e instanceof ConnectException || e instanceof SocketException) {
            if (!Files.exists(socket)) {
                return new ProducerNotFoundException("no producer is running in " + dir + " (no control socket" + within
                        + "); running: " + ProducerDirectory.liveProducers()
                        + ". Start one with: tensorsocket serve --name "
                        + name + " ...");
            }
            return new ProducerNotFoundException(
                    "producer '" + name + "' is not running (" + socket + " is left over from a"
                            + " producer that died, and none replaced it" + within
                            + "); start it again, or remove the leftovers"
                            + " with: tensorsocket clean");
        }
        return new ProducerNotFoundException(
                "could not connect to producer '" + name + "' at " + socket + within + ": " + e.getMessage());
    }

    private static void closeQuietly(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing to report about a socket that never connected
        }
    }

    /** The state is one of this class's constants, told apart by identity. */
    @SuppressWarnings("ReferenceEquality")
    private static boolean isAwaitingFeeder(Attempt a) {
        return a.state() == AWAITS_FEEDER;
    }
}
