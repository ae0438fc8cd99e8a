package io.tensorsocket.producer;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.arena.ArenaLayout;
import java.util.Locale;

/**
 * How many slots a producer's arena has, and why. A count the user gave is taken as it is; a size gives the
 * slots that fit in it; otherwise the default: rubber band + claims ahead + 4, at least 8, and for small
 * batches as many as fit in 64 MiB, up to 64, but no more than half of what the file system holding the
 * arena has free, so that a small {@code /dev/shm} (64 MB in a default Docker container) still works and
 * leaves room for others. Never fewer than rubber band + claims ahead + 1 (a smaller arena could deadlock);
 * an explicit choice below that is refused with the size that would do, and a default where even that does
 * not fit is left to the arena's reservation to report as a full file system. A pure function.
 */
public final class ArenaSizing {

    /** The slots chosen and, for the default, why that many (for the log); {@code reason} is null for an explicit choice. */
    public record Choice(int slots, String reason) {}

    private ArenaSizing() {}

    /**
     * The arena's slot count for {@code batch}: the count or size asked for, else the default within the free space.
     *
     * @param slots      the count asked for, or 0
     * @param arenaBytes the size asked for, or 0
     * @param freeBytes  what the arena's file system has free
     * @throws IllegalArgumentException if the count or size asked for holds fewer slots than the producer needs
     */
    public static Choice choose(
            BatchLayout batch, int slots, long arenaBytes, int rubberBand, int claimsAhead, long freeBytes) {
        int min = Math.max(2, rubberBand + claimsAhead + 1);
        long slotBytes = ArenaLayout.slotBytesFor(batch);
        Choice c;
        if (slots > 0) {
            c = new Choice(slots, null);
        } else if (arenaBytes > 0) {
            c = new Choice((int) Math.min(Integer.MAX_VALUE, ArenaLayout.slotsThatFit(batch, arenaBytes)), null);
        } else {
            c = byDefault(batch, slotBytes, min, freeBytes);
        }
        if (c.slots() < min) {
            long neededMiB = (ArenaLayout.HEADER_BYTES + slotBytes * min + (1 << 20) - 1) >> 20;
            throw new IllegalArgumentException("the arena holds " + c.slots() + " slots of " + (slotBytes >> 10)
                    + " KiB (a batch of " + batch.batchSize() + " samples); this producer needs at least " + min
                    + " (rubber band " + rubberBand + " + claims ahead " + claimsAhead + " + 1): give it at least "
                    + neededMiB + " MiB or lower the rubber band");
        }
        return c;
    }

    private static Choice byDefault(BatchLayout batch, long slotBytes, int min, long freeBytes) {
        long cheap = Math.min(64, (64L << 20) / slotBytes);
        int wanted = (int) Math.max(Math.max(8, min + 3), cheap);
        long share = freeBytes / 2;
        if (ArenaLayout.HEADER_BYTES + wanted * slotBytes <= share) {
            return new Choice(wanted, "that is the default for " + (slotBytes >> 10) + " KiB batches");
        }
        int n = (int) Math.max(min, Math.min(wanted, ArenaLayout.slotsThatFit(batch, share)));
        return new Choice(
                n,
                "the default " + wanted + " slots (" + mib(ArenaLayout.HEADER_BYTES + wanted * slotBytes)
                        + " MiB) would take more than half of the free space");
    }

    /** {@code bytes} in MiB with one decimal. */
    public static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / (double) (1 << 20));
    }
}
