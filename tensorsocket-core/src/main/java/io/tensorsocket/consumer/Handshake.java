package io.tensorsocket.consumer;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.JobRank;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.rings.Futex;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.SocketChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Joins a local producer: HELLO over its socket, then a WELCOME checked against what this consumer maps
 * (a layout that exists, an arena inside the producer's directory with the announced slot size, the ring
 * it was given). The result is a validated {@link Session}, or an error that says which of these failed;
 * nothing stays open after an error.
 */
public final class Handshake {

    /** A joined producer: the link to it, what it announced, and its arena mapped read-only. */
    public record Session(ConsumerLink link, Message.Welcome welcome, SharedArena arena) {}

    private Handshake() {}

    /** Joins the producer called {@code name} whose directory is {@code dir}. */
    public static Session join(Path dir, String name, ConsumerOptions options) {
        return join(dir, name, options, null);
    }

    /**
     * Joins as {@link #join(Path, String, ConsumerOptions)} does; with {@code resume}, to be served the rest of the
     * epoch a checkpoint was taken in (RESUME before HELLO), then the stream's end.
     */
    public static Session join(Path dir, String name, ConsumerOptions options, Message.Resume resume) {
        SocketChannel ch = ProducerSocket.connect(dir, name, options.connectTimeout());
        MessageChannel mc = new MessageChannel(ch);
        ConsumerLink link = new ConsumerLink(mc, name, options.liveness());
        link.spinWait(options.spinWait().toNanos());
        SharedArena arena = null;
        JobRank rank = options.jobRank();
        try {
            if (resume != null) {
                mc.send(resume);
            }
            mc.send(new Message.Hello(
                    options.batchSize(),
                    options.dropLast(),
                    ProcessHandle.current().pid(),
                    options.client() != null
                            ? options.client()
                            : ProcessHandle.current().info().command().orElse("java"),
                    options.startPolicy(),
                    options.ringHandoff() && Futex.supported(),
                    rank == null ? "" : rank.job(),
                    rank == null ? 0 : rank.rank(),
                    rank == null ? 1 : rank.worldSize(),
                    true)); // it can be moved to a lane (a rank with the rest of its job)
            // A rank of a job is answered once all the job's ranks have joined (the producer sends heartbeats
            // meanwhile).
            Message first = link.take(
                    options.connectTimeout().toNanos(),
                    rank == null
                            ? "the answer to HELLO"
                            : "the answer to HELLO (the producer admits " + rank + " once all its ranks have joined)");
            if (!(first instanceof Message.Welcome w)) {
                throw new ProtocolException("producer '" + name + "' answered HELLO with "
                        + first.getClass().getSimpleName());
            }
            link.producerPid(w.producerPid());
            ArenaLayout layout = announcedLayout(name, w);
            Path arenaPath = dir.resolve(ProducerDirectory.ARENA_FILE);
            if (!Path.of(w.arenaPath())
                    .toAbsolutePath()
                    .normalize()
                    .equals(arenaPath.toAbsolutePath().normalize())) {
                throw new ProtocolException(
                        "producer '" + name + "' announced arena " + w.arenaPath() + " outside its directory " + dir);
            }
            if (layout.slotBytes() != w.slotBytes()) {
                throw new ProtocolException("producer '" + name + "' announced " + w.slotBytes()
                        + "-byte slots where its layout needs " + layout.slotBytes());
            }
            arena = SharedArena.openReadOnly(arenaPath, layout, w.sessionId());
            if (w.ring() != Message.Welcome.NO_RING) {
                link.handOffThrough(
                        DescriptorRings.open(dir.resolve(ProducerDirectory.RINGS_FILE), w.sessionId()),
                        w.ring(),
                        w.consumerId());
            }
            return new Session(link, w, arena);
        } catch (IOException e) {
            // What the producer said before it went (an eviction, say) explains a vanished arena best.
            link.awaitReceiverEnd(500);
            closeAll(link, arena);
            link.check();
            if (e instanceof NoSuchFileException) {
                throw new ProducerGoneException("producer '" + name + "' went away while this consumer connected", e);
            }
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            closeAll(link, arena);
            throw e;
        }
    }

    private static void closeAll(ConsumerLink link, SharedArena arena) {
        link.close();
        if (arena != null) {
            arena.close();
        }
    }

    /** The arena layout a WELCOME describes; impossible geometry is the producer's protocol error. */
    static ArenaLayout announcedLayout(String name, Message.Welcome w) {
        try {
            ArenaLayout layout = ArenaLayout.of(new BatchLayout(w.tensors(), w.producerBatchSize()), w.slotCount());
            layout.fileBytes(); // overflows for geometry no address space holds
            return layout;
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new ProtocolException("producer '" + name + "' announced an impossible arena (" + w.slotCount()
                    + " slots of " + w.producerBatchSize() + " samples of " + w.tensors() + "): " + e.getMessage());
        }
    }
}
