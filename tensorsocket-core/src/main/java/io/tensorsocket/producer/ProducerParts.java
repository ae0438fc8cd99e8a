package io.tensorsocket.producer;

import io.tensorsocket.SharedMemoryFullException;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.stream.StartPoint;
import java.io.IOException;
import java.time.Duration;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a producer holds on this host, made in order in its claimed directory (the arena, the consumers'
 * descriptor rings, the control socket), each shared with the directory's access group as it is made. One
 * cleanup path: {@link #close()} removes whatever was made, in reverse order, and the directory last, both
 * when building the producer fails half-way and when it is closed.
 */
public final class ProducerParts implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ProducerParts.class);

    private final ProducerDirectory directory;
    private SharedArena arena;
    private DescriptorRings rings;
    private ProducerServer server;
    private boolean closed;

    /** Parts in {@code directory}, which they own from now on (closing them releases it). */
    public ProducerParts(ProducerDirectory directory) {
        this.directory = directory;
    }

    public ProducerDirectory directory() {
        return directory;
    }

    /** Creates, pre-touches and shares the arena. */
    public SharedArena createArena(ArenaLayout layout, long sessionId, long pid) throws IOException {
        arena = SharedArena.create(directory.arenaPath(), layout, sessionId, pid);
        directory.share(directory.arenaPath(), false);
        return arena;
    }

    /**
     * Creates and shares {@code count} descriptor rings for an arena of {@code slots}, or returns null where
     * there is no room for them: the arena fitted and matters more, so the producer then serves over sockets.
     */
    public DescriptorRings createRings(int count, int slots, long sessionId, String producer) throws IOException {
        try {
            rings = DescriptorRings.create(directory.ringsPath(), count, slots, sessionId);
        } catch (SharedMemoryFullException e) {
            log.warn(
                    "no room for the consumers' descriptor rings ({} bytes, {} free); producer '{}' hands"
                            + " every batch over its consumer's socket",
                    e.bytesNeeded(),
                    e.bytesFree(),
                    producer);
            return null;
        }
        directory.share(directory.ringsPath(), true);
        return rings;
    }

    /** Opens and shares the control socket, welcoming each consumer with {@code welcome} of its start. */
    public ProducerServer serve(ProducerCore core, Duration helloTimeout, Function<StartPoint, Message.Welcome> welcome)
            throws IOException {
        server = new ProducerServer(directory.socketPath(), core, helloTimeout, welcome);
        directory.share(directory.socketPath(), true);
        return server;
    }

    /** Stops accepting consumers: the socket goes first, so no one joins a producer being closed. */
    public void closeServer() {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** Removes everything made, in reverse order, then the directory. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeServer();
        if (arena != null) {
            arena.close();
        }
        if (rings != null) {
            rings.close();
        }
        directory.close();
    }
}
