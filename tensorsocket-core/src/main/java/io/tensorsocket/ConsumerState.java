package io.tensorsocket;

import java.util.Arrays;
import java.util.Objects;

/**
 * Where a consumer stands, for a training checkpoint: the producer and the orders it read, where its epoch began and
 * how many samples of its share of it were handed out. It describes the next batch to come: a consumer given it by
 * {@link TensorConsumer#resume(ConsumerState)} before it iterates reads every sample of that epoch not read before,
 * once (loaded again by index), whether the producer ran on, lingers or was restarted with the same data set and seed,
 * then whole epochs. Plain values only, the same fields as the Python client's {@code state_dict()}.
 *
 * @param producer        the producer's name
 * @param samplesPerEpoch the producer's samples per epoch
 * @param epochBase       the stream position where its epoch begins ({@code epoch × samplesPerEpoch + join offset})
 * @param handed          samples of its share of that epoch handed out (0: none; the epoch comes whole)
 * @param batchSize       its batch size
 * @param dropLast        whether it drops each epoch's short last batch
 * @param job             its data-parallel job, or null
 * @param rank            its rank in the job (0 without)
 * @param worldSize       its job's ranks (1 without)
 * @param orderKey        the key of the producer's orders (its seed), or null where the producer logs no draws
 * @param datasetSize     the producer's data set size, or null likewise
 * @param shuffle         whether the producer shuffles, or null likewise
 * @param draws           the draws its epoch's orders came from (epoch, boundary count, boundaries, ...), or null
 */
public record ConsumerState(
        String producer,
        long samplesPerEpoch,
        long epochBase,
        long handed,
        int batchSize,
        boolean dropLast,
        String job,
        int rank,
        int worldSize,
        Long orderKey,
        Integer datasetSize,
        Boolean shuffle,
        long[] draws) {

    /** The epoch it stands in: the producer epoch its epoch began in. */
    public long epoch() {
        return epochBase / samplesPerEpoch;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConsumerState s
                && s.producer.equals(producer)
                && s.samplesPerEpoch == samplesPerEpoch
                && s.epochBase == epochBase
                && s.handed == handed
                && s.batchSize == batchSize
                && s.dropLast == dropLast
                && Objects.equals(s.job, job)
                && s.rank == rank
                && s.worldSize == worldSize
                && Objects.equals(s.orderKey, orderKey)
                && Objects.equals(s.datasetSize, datasetSize)
                && Objects.equals(s.shuffle, shuffle)
                && Arrays.equals(s.draws, draws);
    }

    @Override
    public int hashCode() {
        return producer.hashCode() * 31 + Long.hashCode(epochBase * 31 + handed);
    }

    @Override
    public String toString() {
        return "ConsumerState[producer=" + producer + ", epochBase=" + epochBase + ", handed=" + handed + ", draws="
                + Arrays.toString(draws) + "]";
    }
}
