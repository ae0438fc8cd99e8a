package io.tensorsocket.producer;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSource;
import io.tensorsocket.IndexedSource;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.arena.SpaceReservation;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.rings.Futex;
import io.tensorsocket.spi.RelayedSource;
import io.tensorsocket.spi.UpstreamBoundaries;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts a producer together from its {@link ProducerSpec}: claims the directory, waits for the source's layout, sizes and
 * maps the arena, makes the core, the consumers' rings and the control socket. Whatever fails, nothing of the
 * producer stays behind: the source is closed and every part made so far removed ({@link ProducerParts}).
 */
final class ProducerAssembly {
    private static final Logger log = LoggerFactory.getLogger(TensorProducer.class);

    /** A producer's parts, its core, the description every WELCOME carries, and its epochs. */
    record Assembled(ProducerParts parts, ProducerCore core, String description, long firstEpoch, long epochs) {}

    private ProducerAssembly() {}

    static Assembled assemble(ProducerSpec spec, long pid) throws IOException {
        BatchSource source = spec.source();
        String name = spec.name();
        Path dir = spec.directory();
        ProducerDirectory.checkSocketPathFits(dir.toAbsolutePath().normalize());
        // Tells this start's arena from an earlier producer's of the same name; no secret (the directory is the
        // user's), so not SecureRandom, whose providers take tens of ms to load while a share's trial waits.
        long sessionId = ThreadLocalRandom.current().nextLong() ^ (pid << 32) ^ System.nanoTime();
        ProducerParts made = new ProducerParts(ProducerDirectory.claim(dir, spec.accessGroup()));
        try {
            Path at = made.directory().path();
            if (spec.shareKey() != null) { // before the socket opens: whoever connects can compare it
                Files.writeString(at.resolve(ProducerDirectory.SHARE_FILE), spec.shareKey());
            }
            awaitLayout(source, name, at);
            BatchLayout batch = source.layout();
            long firstEpoch = source.firstEpoch();
            long count = source.epochs(spec.epochs());
            long epochs = count == 0 ? 0 : firstEpoch + count;
            String description = checkedDescription(source);
            long free = SpaceReservation.usableBytes(at);
            long reserve = source.sharedMemoryReserve(); // the loader's workers' share of the same memory
            ArenaSizing.Choice sizing = ArenaSizing.choose(
                    batch,
                    spec.slots(),
                    spec.arenaBytes(),
                    spec.rubberBand(),
                    spec.claimsAhead(),
                    Math.max(0, free - reserve));
            SharedMemoryShare.warnIfShort(
                    name,
                    at,
                    free,
                    reserve,
                    ArenaLayout.of(batch, sizing.slots()).fileBytes());
            ArenaLayout layout = ArenaLayout.of(batch, sizing.slots());
            if (sizing.reason() != null) {
                log.info(
                        "arena of producer '{}': {} slots of {} KiB = {} MiB, because {}; {} MiB free in {} (set --arena-mb"
                                + " or --slots to choose)",
                        name,
                        sizing.slots(),
                        layout.slotBytes() >> 10,
                        ArenaSizing.mib(layout.fileBytes()),
                        sizing.reason(),
                        ArenaSizing.mib(free),
                        at);
            }
            SharedArena arena = made.createArena(layout, sessionId, pid);
            UpstreamBoundaries upstream = source.byIndex() == null && source instanceof RelayedSource relayed
                    ? relayed.upstreamBoundaries()
                    : null;
            StartMode midEpoch = source.byIndex() != null || upstream != null ? StartMode.EXACT : StartMode.ROLLING;
            ProducerCore core = new ProducerCore(
                    arena,
                    new ServingRules(
                            source.samplesPerEpoch(),
                            firstEpoch,
                            epochs,
                            spec.rubberBand(),
                            sizing.claimsAhead(),
                            spec.stallTimeout(),
                            spec.effectiveIdleTimeout(count),
                            spec.minConsumers(),
                            spec.effectiveStartGrace(midEpoch, epochs),
                            name,
                            midEpoch,
                            spec.jobTimeout(),
                            source instanceof RelayedSource));
            DescriptorRings rings = Futex.supported() && spec.rings() > 0
                    ? made.createRings(spec.rings(), layout.slotCount(), sessionId, name)
                    : null;
            if (rings != null) {
                core.handOffThrough(rings);
            }
            if (upstream != null) {
                core.keepBoundariesUpstream(upstream);
            }
            core.reportsCache(source::cacheFigures);
            core.onPaused(source::paused);
            IndexedSource byIndex = source.byIndex();
            if (byIndex != null && byIndex.shuffles() && byIndex.shuffleSeed().isPresent()) {
                core.reportsSeed(byIndex.shuffleSeed().getAsLong());
            }
            if (source.byIndex() != null && source.byIndex().loadsConcurrently()) {
                int bound = Math.min(spec.lanes(), source.byIndex().lanesAtMost());
                core.serveLanes(new Lanes.Supply(
                        source.byIndex(),
                        bound,
                        spec.laneIdleCores(),
                        made.directory(),
                        sessionId,
                        pid,
                        LoadCpu.of(source.loaderPid())));
            }
            String arenaPath = made.directory().arenaPath().toString();
            made.serve(
                    core,
                    spec.helloTimeout(),
                    start -> new Message.Welcome(
                            sessionId,
                            0,
                            pid,
                            arenaPath,
                            layout.slotCount(),
                            layout.slotBytes(),
                            batch.batchSize(),
                            batch.tensors(),
                            source.samplesPerEpoch(),
                            epochs,
                            start.mode(),
                            start.epoch(),
                            start.sample(),
                            description,
                            Message.Welcome.NO_RING,
                            midEpoch));
            log.info(
                    "producer '{}' serves {} in {}: {} slots of {} KiB ({} samples each) in {} pages, rubber band {} batches",
                    name,
                    description,
                    dir,
                    layout.slotCount(),
                    layout.slotBytes() / 1024,
                    batch.batchSize(),
                    arena.hugePages() ? "2 MiB" : "4 KiB",
                    spec.rubberBand());
            return new Assembled(made, core, description, firstEpoch, epochs);
        } catch (IOException | RuntimeException | Error e) {
            String why = e.getMessage() != null ? e.getMessage() : e.toString();
            try {
                source.abandon(why);
            } catch (Exception ce) {
                e.addSuppressed(ce);
            }
            made.directory().failBeforeServing(why);
            made.close();
            throw e;
        }
    }

    /** Waits for the source's layout (an external producer's: until its feeder declares it). */
    private static void awaitLayout(BatchSource source, String name, Path at) throws IOException {
        try {
            source.awaitLayout(at);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ProducerGoneException("producer '" + name + "' was stopped while it waited for its source's"
                    + " layout (an external producer's feeder)");
        }
    }

    /**
     * The source's description, which every WELCOME carries. One longer than the protocol's string limit is
     * refused here rather than cut: sources such as the synthetic one put parameters in it that consumers
     * parse, and a cut description would be wrong data, not just shorter text.
     */
    private static String checkedDescription(BatchSource source) {
        String description = Objects.requireNonNull(source.description(), "source description");
        int bytes = description.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > BatchSource.MAX_DESCRIPTION_BYTES) {
            throw new IllegalArgumentException(
                    "the description of source " + source.getClass().getName() + " is " + bytes
                            + " UTF-8 bytes, more than the " + BatchSource.MAX_DESCRIPTION_BYTES
                            + " the protocol carries; make its"
                            + " description() shorter (it starts: \""
                            + description.substring(0, Math.min(60, description.length()))
                            + "...\")");
        }
        return description;
    }
}
