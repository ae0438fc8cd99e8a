package io.tensorsocket.consumer;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.directory.ProducerDirectory;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The arenas one consumer reads, as one range of slot numbers: its producer's arena first, then each lane's arena it
 * was moved to (MOVE), numbered on from there. Every arena stays mapped until the consumer closes, so a batch handed
 * out before a move still reads what it showed.
 *
 * <pre>
 *   slots  0 … N-1 | N … N+M-1
 *          arena   | lane-1 (M slots)
 * </pre>
 */
final class ArenaRegions implements BatchAssembly.SlotRegions {
    private final Path directory;
    private final String producer;
    private final long sessionId;
    private final List<SharedArena> arenas = new ArrayList<>(2);
    private final List<Integer> bases = new ArrayList<>(2);
    private int next;

    /** The arena of producer {@code producer} (in {@code directory}, of session {@code sessionId}), mapped already. */
    ArenaRegions(Path directory, String producer, long sessionId, SharedArena main) {
        this.directory = directory;
        this.producer = producer;
        this.sessionId = sessionId;
        add(main);
    }

    private int add(SharedArena a) {
        int base = next;
        arenas.add(a);
        bases.add(base);
        next += a.layout().slotCount();
        return base;
    }

    /**
     * Maps the arena of the lane a MOVE named, of {@code slotCount} slots shaped as the producer's: the number of its
     * first slot.
     */
    int mapLane(int lane, int slotCount) throws IOException {
        Path file = directory.resolve(ProducerDirectory.LANE_FILE_PREFIX + lane);
        ArenaLayout main = arenas.getFirst().layout();
        return add(SharedArena.openReadOnly(file, ArenaLayout.of(main.batch(), slotCount), sessionId));
    }

    @Override
    public MemorySegment region(int slot, int tensor) {
        for (int i = arenas.size() - 1; i >= 0; i--) {
            if (slot >= bases.get(i)) {
                return arenas.get(i).region(slot - bases.get(i), tensor);
            }
        }
        throw new ProtocolException("slot " + slot + " lies in no arena of producer '" + producer + "'");
    }

    /** Unmaps every arena. */
    void close() {
        arenas.forEach(SharedArena::close);
    }
}
