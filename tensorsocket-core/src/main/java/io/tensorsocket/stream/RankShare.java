package io.tensorsocket.stream;

/**
 * Which samples of each epoch one consumer takes: all of them, or the share of rank {@code rank} of the
 * {@code worldSize} ranks of a data-parallel job. Together the ranks of a job take every sample of an epoch once
 * and each takes the same number, as PyTorch's {@code DistributedSampler} deals them: rank {@code r} takes the
 * epoch's samples at offsets {@code r, r + w, r + 2w, ...}.
 *
 * <pre>
 *  an epoch of n = 10 samples, w = 4 ranks, each L = ceil(10 / 4) = 3 samples (pad = L·w − n = 2)
 *
 *  offset      0  1  2  3  4  5  6  7  8  9 | 10 11     (10 and 11 lie past the epoch)
 *  rank        0  1  2  3  0  1  2  3  0  1 |  2  3
 *  rank 2 takes 2, 6, 10 → 10 − pad = 8;  rank 3 takes 3, 7, 11 → 9
 *
 *  with drop-last: L = floor(10 / 4) = 2, offsets 8 and 9 are taken by no rank
 * </pre>
 *
 * <p>An offset past the epoch's end is taken {@code pad} samples earlier (counted back from the epoch's end, round
 * again where a job has more ranks than an epoch has samples), so the last samples of the epoch are the
 * ones that two ranks see (where {@code DistributedSampler} repeats the first ones): a rank then never needs the
 * start of an epoch again at its end, and holds only the slots its current batch spans. The epoch's order is a
 * random permutation either way, so which samples repeat is equally random. With drop-last the tail that does not
 * divide is taken by no rank, as {@code DistributedSampler(drop_last=True)} drops it.
 *
 * <p>A rank's offsets rise strictly, so a rank moves through the stream at the pace of every other consumer and
 * releases what lies behind its last sample.
 */
public record RankShare(int rank, int worldSize) {

    /** The whole epoch: what a consumer that is not a rank of a job takes. */
    public static final RankShare ALL = new RankShare(0, 1);

    public RankShare {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " of " + worldSize + " ranks is invalid: a job has at"
                    + " least one rank, numbered 0 to world size - 1");
        }
    }

    /** Whether this is the share of a rank of a job of more than one rank. */
    public boolean partial() {
        return worldSize > 1;
    }

    /** Samples this share takes of an epoch of {@code n}. */
    public long count(long n, boolean dropLast) {
        return dropLast ? n / worldSize : (n + worldSize - 1) / worldSize;
    }

    /** The offset in an epoch of {@code n} of this share's sample {@code k} ({@code 0 <= k < count(n, dropLast)}). */
    public long offset(long k, long n, boolean dropLast) {
        long u = rank + k * worldSize;
        if (u < n) {
            return u;
        }
        long fromEnd = count(n, dropLast) * worldSize - 1 - u; // 0 for the last offset dealt
        return n - 1 - fromEnd % n;
    }

    /**
     * Stream positions one consumer batch of {@code batchSize} samples of this share can span: what decides how many
     * arena slots it may hold at once.
     */
    public long span(int batchSize) {
        return (batchSize - 1L) * worldSize + 1;
    }
}
