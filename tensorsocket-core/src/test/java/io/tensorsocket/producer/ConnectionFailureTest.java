package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.directory.ProducerDirectory;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A connection thread that fails answers its peer at once, and a status query that gets no answer times out. */
@Timeout(60)
class ConnectionFailureTest {
    @TempDir
    Path tmp;

    @Test
    void aWelcomeThatCannotBeEncodedIsAnsweredWithAnErrorInsteadOfSilence() throws Exception {
        String tooLong = "x".repeat(1 << 20); // more than a frame holds: the encoder throws
        try (ServerFixture p = new ServerFixture(Files.createDirectory(tmp.resolve("p")), tooLong)) {
            long t0 = System.nanoTime();
            TensorSocketException e = assertThrows(
                    TensorSocketException.class,
                    () -> TensorConsumer.connect(
                                    p.dir, ConsumerOptions.batchSize(4).withConnectTimeout(Duration.ofSeconds(20)))
                            .close());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.getMessage().contains("failed while serving"), e.getMessage());
            assertTrue(ms < 10_000, "answered after " + ms + " ms, not at once");
            assertTrue(p.core.consumerCount() == 0, "the failed consumer is not left registered");
        }
    }

    @Test
    void aProducerThatNeverAnswersAStatusRequestTimesOut() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("silent"));
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(dir.resolve(ProducerDirectory.SOCKET_FILE)));
            Thread acceptor = Thread.ofPlatform().daemon().start(() -> {
                try (SocketChannel ignored = server.accept()) {
                    Thread.sleep(30_000); // accepts and says nothing
                } catch (Exception e) {
                    // closed at the end of the test
                }
            });
            long t0 = System.nanoTime();
            TensorSocketTimeoutException e = assertThrows(
                    TensorSocketTimeoutException.class, () -> TensorProducer.queryStatus(dir, Duration.ofMillis(300)));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.getMessage().contains("did not answer a status request within 300 ms"), e.getMessage());
            assertTrue(ms < 10_000, "timed out after " + ms + " ms");
            acceptor.interrupt();
        }
    }
}
