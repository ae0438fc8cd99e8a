package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.tensorsocket.StartPolicy;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Consumers launched in the same moment as their producer fails (as users launch a feeder and its trainers) hear the
 * failure: every connection that reached the control socket before it closed is answered with what the attached
 * consumers were told, none is reset unanswered.
 */
@Timeout(60)
class ClosingAnswersTest {
    @TempDir
    Path tmp;

    @Test
    void everyConnectionThatReachedTheSocketBeforeItClosedHearsTheLoadersFailure() throws Exception {
        Message.Error failure = new Message.Error(
                Message.ErrorCode.LOADER_FAILED,
                "the loader of producer 'p' failed in epoch 0: ValueError: cannot decode sample 417");
        try (ServerFixture p = new ServerFixture(Files.createDirectory(tmp.resolve("p")), "test")) {
            // Connected, not yet past HELLO: some accepted, some perhaps still queued at the socket.
            List<MessageChannel> arriving = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                ch.connect(UnixDomainSocketAddress.of(p.socket()));
                arriving.add(new MessageChannel(ch));
            }
            p.core.shutdown("loader failed", failure);
            Thread closing = Thread.ofPlatform().start(p.server::close);
            Thread.sleep(100); // the producer is closing while they say HELLO
            assertFalse(Files.exists(p.socket()), "a closing producer's socket still takes new connections");
            for (MessageChannel ch : arriving) {
                ch.send(new Message.Hello(4, false, ProcessHandle.current().pid(), "test", StartPolicy.JOIN_NOW));
            }
            for (MessageChannel ch : arriving) {
                assertEquals(failure, ch.read());
                ch.close();
            }
            closing.join();
        }
    }
}
