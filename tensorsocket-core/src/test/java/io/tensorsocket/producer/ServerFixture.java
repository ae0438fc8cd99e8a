package io.tensorsocket.producer;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A producer's core and control socket over a small arena in {@code dir}, without a source: what the tests of the
 * socket's answers need. The welcome carries {@code source} as the source's description.
 */
final class ServerFixture implements AutoCloseable {
    static final List<TensorSpec> TENSORS = List.of(TensorSpec.of("data", DType.FLOAT32, 4));

    final Path dir;
    final SharedArena arena;
    final ProducerCore core;
    final ProducerServer server;

    ServerFixture(Path dir, String source) throws IOException {
        this.dir = dir;
        ArenaLayout layout = ArenaLayout.of(new BatchLayout(TENSORS, 4), 4);
        Path arenaFile = dir.resolve(ProducerDirectory.ARENA_FILE);
        arena = SharedArena.create(arenaFile, layout, 7, ProcessHandle.current().pid());
        core = new ProducerCore(
                arena,
                new ServingRules(
                        16,
                        0,
                        1,
                        2,
                        1,
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(5),
                        1,
                        Duration.ZERO,
                        "p",
                        StartMode.ROLLING,
                        Duration.ofSeconds(30),
                        false));
        server = new ProducerServer(
                socket(),
                core,
                Duration.ofSeconds(5),
                start -> new Message.Welcome(
                        7,
                        0,
                        ProcessHandle.current().pid(),
                        arenaFile.toString(),
                        4,
                        layout.slotBytes(),
                        4,
                        TENSORS,
                        16,
                        1,
                        start.mode(),
                        start.epoch(),
                        start.sample(),
                        source));
    }

    Path socket() {
        return dir.resolve(ProducerDirectory.SOCKET_FILE);
    }

    @Override
    public void close() {
        server.close();
        arena.close();
    }
}
