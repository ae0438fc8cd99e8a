package io.tensorsocket;

import java.util.Objects;

/**
 * A consumer's place in a data-parallel job: rank {@code rank} of the {@code worldSize} ranks of job {@code job}
 * (as torchrun numbers them, {@code RANK} of {@code WORLD_SIZE}). The ranks of a job together take each sample of
 * every epoch once, each an equal share, as PyTorch's {@code DistributedSampler} deals them; every rank of the job
 * starts at the same point of the stream, so the producer admits them once all have joined.
 *
 * @param job       the job's name, the same for all its ranks (1 to {@link #MAX_JOB} characters)
 * @param rank      this consumer's rank, {@code 0 <= rank < worldSize}
 * @param worldSize how many ranks the job has
 */
public record JobRank(String job, int rank, int worldSize) {
    /** Longest job name. */
    public static final int MAX_JOB = 100;

    public JobRank {
        Objects.requireNonNull(job, "job");
        if (job.isBlank() || job.length() > MAX_JOB) {
            throw new IllegalArgumentException("a job name has 1 to " + MAX_JOB + " characters, not '" + job + "'");
        }
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " of a world of " + worldSize + " is invalid: ranks are"
                    + " numbered 0 to world size - 1 (torchrun's RANK and WORLD_SIZE)");
        }
    }

    @Override
    public String toString() {
        return "rank " + rank + " of " + worldSize + " of job '" + job + "'";
    }
}
