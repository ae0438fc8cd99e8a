package io.tensorsocket.producer;

import io.tensorsocket.stream.StreamGeometry;
import java.util.List;

/**
 * What a finite stream still owes its consumers once it published its last epoch: a consumer that joined an epoch
 * mid-way (exact, at sample {@code s}) is owed the rest of its last epoch, the first {@code s} samples of the epoch
 * after the stream's last ({@link StreamGeometry#lastEpochEnd}); the order drawn for that epoch keeps its chunks
 * ({@code ChunkedShuffle}), so those are exactly the samples its last epoch lacks.
 *
 * <pre>
 *  main stream     | e(E-1) . . . . . . . . . . | E: tail . . . |          E = the stream's epochs
 *  consumer A      |  (joined at an epoch start)|                         owed nothing more: ends at E
 *  consumer B      |        s                   |---- s ----|             owed E·N to E·N + s (until)
 * </pre>
 *
 * Each attached consumer's {@code until} is set here: batches from it on are never sent to it. The main stream loads
 * the longest tail its own consumers are owed; a lane loads its members' ({@link LaneSteps#orderFor}). Under the
 * producer's lock.
 */
final class Tails {
    /** The longest tail owed to any consumer and to one of the main stream, in samples. */
    record Owed(int any, int main) {}

    private final StreamGeometry geometry;
    private final Attached consumers;

    Tails(StreamGeometry geometry, Attached consumers) {
        this.geometry = geometry;
        this.consumers = consumers;
    }

    /** The stream's {@code epochs} epochs were published: sets where each consumer's stream ends; what is owed. */
    Owed decide(long epochs) {
        int any = 0;
        for (ConsumerSession s : consumers.all()) {
            s.until = geometry.lastEpochEnd(geometry.position(s.start.epoch(), s.start.sample()), epochs);
            any = Math.max(any, tailOf(s, epochs));
        }
        return new Owed(any, main(epochs));
    }

    /** The longest tail owed to a consumer of the main stream now. */
    int main(long epochs) {
        int main = 0;
        for (ConsumerSession s : consumers.all()) {
            if (s.lane == null) {
                main = Math.max(main, tailOf(s, epochs));
            }
        }
        return main;
    }

    /** The longest tail owed to a member of {@code members}. */
    int ofMembers(List<ConsumerSession> members, long epochs) {
        int tail = 0;
        for (ConsumerSession s : members) {
            tail = Math.max(tail, tailOf(s, epochs));
        }
        return tail;
    }

    private int tailOf(ConsumerSession s, long epochs) {
        long end = geometry.position(epochs, 0);
        return s.until == Long.MAX_VALUE ? 0 : (int) Math.max(0, s.until - end);
    }
}
