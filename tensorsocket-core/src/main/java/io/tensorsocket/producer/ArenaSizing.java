package io.tensorsocket.producer;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.arena.ArenaLayout;
import java.util.Locale;

/**
 * How many slots a producer's arena has, how many of them its source may claim ahead, and why. A producer needs
 * at least rubber band + claims ahead + 1 slots (fewer could deadlock); claims ahead are an upper bound, lowered
 * (down to 1) where the arena is short, so the real minimum is rubber band + 2 slots.
 *
 * <ul>
 *   <li>A count the user gave is taken as it is; a size gives the slots that fit in it. Either is refused below
 *       rubber band + 2, with the size that would do.
 *   <li>Otherwise the default: rubber band + claims ahead + 4, at least 8, and for small batches as many as fit in
 *       64 MiB, up to 64, but no more than half of what the file system holding the arena has free, so that a
 *       small {@code /dev/shm} (64 MB in a default Docker container) still works and leaves room for others.
 *       Where not even rubber band + claims ahead + 1 fit in that half, claims ahead are lowered to fit it, and
 *       where not even rubber band + 2 do, that minimum is taken if the free space holds it. A default that does
 *       not fit at all is left to the arena's reservation to report as a full file system, without a reason to log.
 * </ul>
 *
 * A pure function.
 */
public final class ArenaSizing {

    /**
     * The slots chosen, the claims ahead they allow, and (for the log) why; {@code reason} is null where there is
     * nothing to say: an explicit choice the producer takes as it is, or a default the file system cannot hold.
     */
    public record Choice(int slots, int claimsAhead, String reason) {}

    private ArenaSizing() {}

    /**
     * The arena's slots and claims ahead for {@code batch}: the count or size asked for, else the default within
     * the free space.
     *
     * @param slots       the count asked for, or 0
     * @param arenaBytes  the size asked for, or 0
     * @param claimsAhead the claims ahead asked for: the most the source may hold
     * @param freeBytes   what the arena's file system has free
     * @throws IllegalArgumentException if the count or size asked for holds fewer than rubber band + 2 slots
     */
    public static Choice choose(
            BatchLayout batch, int slots, long arenaBytes, int rubberBand, int claimsAhead, long freeBytes) {
        long slotBytes = ArenaLayout.slotBytesFor(batch);
        int fewest = fewestSlots(rubberBand);
        if (slots <= 0 && arenaBytes <= 0) {
            return byDefault(batch, slotBytes, rubberBand, claimsAhead, freeBytes);
        }
        int n = slots > 0 ? slots : (int) Math.min(Integer.MAX_VALUE, ArenaLayout.slotsThatFit(batch, arenaBytes));
        if (n < fewest) {
            long neededMiB = (ArenaLayout.HEADER_BYTES + slotBytes * fewest + (1 << 20) - 1) >> 20;
            throw new IllegalArgumentException("the arena holds " + n + " slots of " + (slotBytes >> 10)
                    + " KiB (a batch of " + batch.batchSize() + " samples); this producer needs at least " + fewest
                    + " (rubber band " + rubberBand + " + 1 claim ahead + 1): give it at least " + neededMiB
                    + " MiB or lower the rubber band");
        }
        int claims = Math.min(claimsAhead, n - rubberBand - 1);
        return new Choice(n, claims, claims < claimsAhead ? lowered(claimsAhead, claims, n, rubberBand) : null);
    }

    /** The fewest slots any producer with this rubber band serves from: the rubber band, one claim and one more. */
    public static int fewestSlots(int rubberBand) {
        return Math.max(2, rubberBand + 2);
    }

    private static Choice byDefault(
            BatchLayout batch, long slotBytes, int rubberBand, int claimsAhead, long freeBytes) {
        int needed = Math.max(2, rubberBand + claimsAhead + 1);
        long cheap = Math.min(64, (64L << 20) / slotBytes);
        int wanted = (int) Math.max(Math.max(8, needed + 3), cheap);
        long half = freeBytes / 2;
        if (bytes(wanted, slotBytes) <= half) {
            return new Choice(wanted, claimsAhead, "that is the default for " + (slotBytes >> 10) + " KiB batches");
        }
        String tooBig = "the default " + wanted + " slots (" + mib(bytes(wanted, slotBytes))
                + " MiB) would take more than half of the free space";
        int inHalf = (int) Math.min(wanted, ArenaLayout.slotsThatFit(batch, half));
        if (inHalf >= needed) {
            return new Choice(inHalf, claimsAhead, tooBig);
        }
        int fewest = fewestSlots(rubberBand);
        int n = Math.max(inHalf, fewest);
        if (bytes(n, slotBytes) > freeBytes) {
            return new Choice(fewest, 1, null); // the reservation says how much is missing
        }
        int claims = n - rubberBand - 1;
        String why = tooBig + ", " + lowered(claimsAhead, claims, n, rubberBand);
        return new Choice(n, claims, n > inHalf ? why + " (the fewest this producer serves from)" : why);
    }

    private static String lowered(int asked, int claims, int slots, int rubberBand) {
        return "claims ahead lowered from " + asked + " to " + claims + " so that " + slots
                + " slots hold the rubber band (" + rubberBand + "), the claims and one more";
    }

    private static long bytes(int slots, long slotBytes) {
        return ArenaLayout.HEADER_BYTES + slots * slotBytes;
    }

    /** {@code bytes} in MiB with one decimal. */
    public static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / (double) (1 << 20));
    }
}
