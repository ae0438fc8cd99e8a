package io.tensorsocket.consumer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.DType;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The handshake against a fake producer on a real socket: a good WELCOME becomes a session with the arena
 * mapped; every bad answer is refused with what was wrong, and the connection is closed behind it (the fake
 * producer reads the end of its stream, nothing stays open).
 */
@Timeout(30)
class HandshakeTest {
    private static final List<TensorSpec> TENSORS = List.of(TensorSpec.of("x", DType.FLOAT32, 3));
    private static final int SLOTS = 4;
    private static final int BATCH = 8;
    private static final long SESSION = 77;

    @TempDir
    Path tmp;

    private Path dir;
    private ServerSocketChannel server;
    private SharedArena arena;
    private ArenaLayout layout;

    @BeforeEach
    void producerFiles() throws IOException {
        dir = Files.createDirectory(tmp.resolve("p"));
        layout = ArenaLayout.of(new BatchLayout(TENSORS, BATCH), SLOTS);
        arena = SharedArena.create(dir.resolve(ProducerDirectory.ARENA_FILE), layout, SESSION, 1);
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(dir.resolve(ProducerDirectory.SOCKET_FILE)));
    }

    @AfterEach
    void close() throws IOException {
        server.close();
        arena.close();
    }

    private Message.Welcome welcome(String arenaPath, long slotBytes) {
        return new Message.Welcome(
                SESSION,
                3,
                ProcessHandle.current().pid(),
                arenaPath,
                SLOTS,
                slotBytes,
                BATCH,
                TENSORS,
                100,
                2,
                StartMode.EPOCH_START,
                0,
                0,
                "fake");
    }

    private Message.Welcome welcome() {
        return welcome(dir.resolve(ProducerDirectory.ARENA_FILE).toString(), layout.slotBytes());
    }

    /** Answers one HELLO with {@code answer}; completes, at the end of the stream, with what the consumer said after it. */
    private CompletableFuture<List<Message>> answer(Message answer) {
        return CompletableFuture.supplyAsync(() -> {
            List<Message> after = new ArrayList<>();
            try (MessageChannel ch = new MessageChannel(server.accept())) {
                assertInstanceOf(Message.Hello.class, ch.read());
                ch.send(answer);
                for (Message m = ch.read(); m != null; m = ch.read()) {
                    after.add(m);
                }
            } catch (IOException e) {
                after.add(null); // reset rather than closed
            }
            return after;
        });
    }

    /** The consumer said goodbye and closed its end. */
    private static void assertLeft(CompletableFuture<List<Message>> after) throws Exception {
        List<Message> said = after.get(10, TimeUnit.SECONDS);
        assertEquals(1, said.size(), said::toString);
        assertInstanceOf(Message.Bye.class, said.getFirst());
    }

    private static ConsumerOptions options() {
        return ConsumerOptions.batchSize(5).withConnectTimeout(Duration.ofSeconds(5));
    }

    @Test
    void aGoodWelcomeBecomesASessionWithTheArenaMapped() throws Exception {
        CompletableFuture<List<Message>> after = answer(welcome());
        Handshake.Session s = Handshake.join(dir, "p", options());
        try {
            assertEquals(SESSION, s.welcome().sessionId());
            assertEquals(layout.slotBytes(), s.arena().layout().slotBytes());
            assertFalse(s.link().ringHandoff()); // none was offered
        } finally {
            s.link().close();
            s.arena().close();
        }
        assertLeft(after);
    }

    @Test
    void anAnswerThatIsNoWelcomeIsRefusedAndTheConnectionClosed() throws Exception {
        CompletableFuture<List<Message>> after = answer(new Message.EndOfStream(1));
        ProtocolException e = assertThrows(ProtocolException.class, () -> Handshake.join(dir, "p", options()));
        assertTrue(e.getMessage().contains("answered HELLO with EndOfStream"), e.getMessage());
        assertLeft(after);
    }

    @Test
    void slotsOfAnotherSizeThanTheLayoutAreRefused() throws Exception {
        CompletableFuture<List<Message>> after =
                answer(welcome(dir.resolve(ProducerDirectory.ARENA_FILE).toString(), layout.slotBytes() + 64));
        ProtocolException e = assertThrows(ProtocolException.class, () -> Handshake.join(dir, "p", options()));
        assertTrue(e.getMessage().contains("-byte slots where its layout needs " + layout.slotBytes()), e.getMessage());
        assertLeft(after);
    }

    @Test
    void anArenaElsewhereIsRefused() throws Exception {
        CompletableFuture<List<Message>> after =
                answer(welcome(tmp.resolve("other.arena").toString(), layout.slotBytes()));
        ProtocolException e = assertThrows(ProtocolException.class, () -> Handshake.join(dir, "p", options()));
        assertTrue(e.getMessage().contains("outside its directory"), e.getMessage());
        assertLeft(after);
    }

    @Test
    void aProducerThatHangsUpInsteadOfAnsweringIsReported() {
        CompletableFuture.runAsync(() -> {
            try (MessageChannel ch = new MessageChannel(server.accept())) {
                ch.read();
            } catch (IOException e) {
                // closed either way
            }
        });
        TensorSocketException e = assertThrows(TensorSocketException.class, () -> Handshake.join(dir, "p", options()));
        assertTrue(e.getMessage().contains("'p'"), e.getMessage());
    }
}
