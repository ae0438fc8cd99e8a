package io.tensorsocket.producer;

import io.tensorsocket.IndexedSource;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.EpochOrders;
import io.tensorsocket.stream.RankShare;
import io.tensorsocket.stream.StreamGeometry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What a consumer that resumes from a checkpoint ({@link Message.Resume}) is served: the rest of its epoch, by index,
 * in the order it would have read it. Its epoch spans stream positions {@code [epochBase, epochBase + N)}, part of
 * producer epoch {@code x} from sample {@code s} on and, where {@code s > 0}, the first {@code s} of epoch
 * {@code x + 1}; the orders are replayed from the draws it was read under, so this producer need not be the one that
 * served the epoch's start.
 *
 * <pre>
 *  its epoch      |        s . . . . . . . . . N | 0 . . . s |
 *                 | epoch x          ^ from      | epoch x+1 |    segments: x [from, N), x+1 [0, s)
 *                   read before the checkpoint ^ | the rest, loaded again
 * </pre>
 *
 * Where the draws end at epoch {@code x}, epoch {@code x + 1} is drawn keeping the chunk {@code [0, s)}, so the rest is
 * the epoch's samples once whichever order the producer drew meanwhile.
 */
record ResumePlan(long from, long end, List<Segment> segments) {

    /** Samples {@code ids} of epoch {@code epoch}, from its sample {@code start} on. */
    record Segment(long epoch, int start, int[] ids) {}

    /** Why a state cannot be resumed here: the message the consumer is refused with. */
    static final class Refused extends Exception {
        Refused(String message) {
            super(message, null, false, false);
        }
    }

    /** The plan for {@code r}, a consumer of {@code hello}'s batch size and rank, over {@code source}. */
    static ResumePlan of(Message.Resume r, Message.Hello hello, StreamGeometry g, IndexedSource source, String name)
            throws Refused {
        long n = g.samplesPerEpoch();
        List<String> differ = new ArrayList<>();
        if (r.datasetSize() != source.datasetSize()) {
            differ.add("a data set of " + r.datasetSize() + " samples, this one serves " + source.datasetSize());
        }
        if (r.samplesPerEpoch() != n) {
            differ.add(r.samplesPerEpoch() + " samples an epoch, this one " + n);
        }
        if (r.shuffle() != source.shuffles()) {
            differ.add(
                    r.shuffle()
                            ? "shuffled epochs, this one does not shuffle"
                            : "unshuffled epochs, this one shuffles");
        }
        if (r.orderKey() != DrawLog.orderKey(source)) {
            differ.add("orders of another seed (order key " + r.orderKey() + ", this one " + DrawLog.orderKey(source)
                    + ")");
        }
        if (!differ.isEmpty()) {
            throw new Refused("the state was taken from a producer of " + String.join("; ", differ) + ": producer '"
                    + name + "' cannot continue that epoch (start it with the same data set and seed)");
        }
        RankShare share = hello.inJob() ? new RankShare(hello.rank(), hello.worldSize()) : RankShare.ALL;
        long count = share.count(n, hello.dropLast());
        if (r.handed() >= count) {
            throw new Refused("the state says " + r.handed() + " samples of an epoch of " + count
                    + " were read: nothing" + " is left of it to resume");
        }
        long x = g.epochOf(r.epochBase());
        int s = (int) (r.epochBase() - g.position(x, 0));
        int[][] orders = replay(r.draws(), x, s, source, name);
        long from = r.epochBase() + (share.partial() ? share.offset(r.handed(), n, hello.dropLast()) : r.handed());
        long end = r.epochBase() + n;
        List<Segment> segments = new ArrayList<>(2);
        long firstEnd = s == 0 ? end : g.position(x + 1, 0);
        if (from < firstEnd) {
            int at = (int) (from - g.position(x, 0));
            segments.add(new Segment(x, at, Arrays.copyOfRange(orders[0], at, (int) n)));
        }
        if (s > 0) {
            int at = (int) Math.max(0, from - g.position(x + 1, 0));
            segments.add(new Segment(x + 1, at, Arrays.copyOfRange(orders[1], at, s)));
        }
        return new ResumePlan(from, end, List.copyOf(segments));
    }

    /**
     * The orders of epochs {@code x} and {@code x + 1} ({@code s > 0} only) replayed from {@code draws}: epoch, boundary
     * count, boundaries, from a fresh draw to epoch {@code x} or later.
     */
    private static int[][] replay(long[] draws, long x, int s, IndexedSource source, String name) throws Refused {
        EpochOrders orders = new EpochOrders(
                source.datasetSize(), source.samplesPerEpoch(), source.shuffles(), source::shuffleRandom);
        int[][] found = new int[2][];
        long expected = -1;
        for (int i = 0; i < draws.length; ) {
            long epoch = draws[i];
            int k = i + 1 < draws.length ? (int) draws[i + 1] : -1;
            if (k < 0 || i + 2 + k > draws.length || (expected >= 0 && epoch != expected)) {
                throw new Refused("the state's draws are broken at value " + i + " (" + Arrays.toString(draws) + ")");
            }
            int[] boundaries = new int[k];
            for (int j = 0; j < k; j++) {
                boundaries[j] = (int) draws[i + 2 + j];
            }
            int[] order;
            try {
                order = orders.draw(epoch, boundaries);
            } catch (IllegalArgumentException e) {
                throw new Refused(
                        "the state's draw of epoch " + epoch + " does not fit this data set: " + e.getMessage());
            }
            if (epoch == x) {
                found[0] = order;
            } else if (epoch == x + 1) {
                found[1] = order;
            }
            expected = epoch + 1;
            i += 2 + k;
        }
        if (found[0] == null) {
            throw new Refused("the state holds no draw of epoch " + x + ", the one it was read in; producer '" + name
                    + "' cannot tell which samples it read");
        }
        if (s > 0 && found[1] == null) {
            found[1] =
                    orders.draw(x + 1, new int[] {s}); // keeps the chunk [0, s): the rest of its epoch, whatever order
        }
        return found;
    }
}
