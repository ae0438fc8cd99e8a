package io.tensorsocket.producer;

import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;

/**
 * The data-parallel jobs among a producer's consumers, and what each rank's arrival and departure means for its job.
 * A job forms as its ranks say HELLO; once all {@code worldSize} have, the producer admits them together at one
 * start, so that their shares of each epoch are of the same epochs. A rank that says HELLO to a job whose ranks were
 * admitted already, whose world size differs, or whose rank is taken, is refused; a job whose ranks do not all come
 * within the job timeout fails, as does a running job one of whose ranks dies (leaves without saying goodbye, or is
 * evicted): its other ranks are told which rank it was, since their training cannot go on without it. A rank that
 * says goodbye leaves its job running. Used under the producer's lock.
 */
final class JobRoster {

    /** A rank that said HELLO and waits for the rest of its job. */
    static final class Candidate {
        final int id;
        final MessageChannel channel;
        final Message.Hello hello;
        final String user;
        /** Completed with its session once admitted (null if its WELCOME could not be sent), or exceptionally. */
        final CompletableFuture<ConsumerSession> admitted = new CompletableFuture<>();

        final long deadlineNanos;

        Candidate(int id, MessageChannel channel, Message.Hello hello, String user, long deadlineNanos) {
            this.id = id;
            this.channel = channel;
            this.hello = hello;
            this.user = user;
            this.deadlineNanos = deadlineNanos;
        }

        boolean waiting() {
            return !admitted.isDone();
        }
    }

    private static final class Job {
        final String name;
        final int worldSize;
        final long deadlineNanos;
        final TreeMap<Integer, Candidate> forming = new TreeMap<>();
        final Map<Integer, ConsumerSession> running = new HashMap<>();

        Job(String name, int worldSize, long deadlineNanos) {
            this.name = name;
            this.worldSize = worldSize;
            this.deadlineNanos = deadlineNanos;
        }
    }

    /** What a rank's HELLO leads to. */
    sealed interface Arrival {
        /** Refused: send this BAD_REQUEST message. */
        record Refused(String why) implements Arrival {}

        /** Waits for the rest of its job. */
        record Waiting(Candidate candidate) implements Arrival {}

        /** Completes its job: admit every one of {@code ranks}, in rank order, at one start. */
        record Complete(Candidate candidate, List<Candidate> ranks) implements Arrival {}
    }

    private final String producer;
    private final long timeoutNanos;
    private final Map<String, Job> jobs = new HashMap<>();

    JobRoster(String producer, Duration timeout) {
        this.producer = producer;
        this.timeoutNanos = timeout.toNanos();
    }

    /** A rank's HELLO arrived (connection {@code id}). */
    Arrival arrive(int id, MessageChannel channel, Message.Hello hello, String user, long now) {
        Job job = jobs.get(hello.job());
        if (job != null && !job.running.isEmpty()) {
            return new Arrival.Refused("job '" + hello.job() + "' started already (its ranks "
                    + ranks(new TreeSet<>(job.running.keySet()))
                    + " are reading): a rank cannot join a job whose epoch is under way; restart all the job's ranks, or"
                    + " name the new job differently");
        }
        if (job != null && job.worldSize != hello.worldSize()) {
            return new Arrival.Refused("rank " + hello.rank() + " of job '" + hello.job() + "' says the job has "
                    + hello.worldSize() + " ranks, but its ranks " + ranks(job.forming.keySet()) + " say "
                    + job.worldSize + ": start every rank with the same world size (WORLD_SIZE)");
        }
        if (job != null && job.forming.containsKey(hello.rank())) {
            Candidate other = job.forming.get(hello.rank());
            return new Arrival.Refused("rank " + hello.rank() + " of job '" + hello.job() + "' joined already (pid "
                    + other.hello.pid() + "): give each process its own rank (RANK), 0 to " + (job.worldSize - 1));
        }
        if (job == null) {
            job = new Job(hello.job(), hello.worldSize(), now + timeoutNanos);
            jobs.put(job.name, job);
        }
        Candidate c = new Candidate(id, channel, hello, user, job.deadlineNanos);
        job.forming.put(hello.rank(), c);
        if (job.forming.size() < job.worldSize) {
            return new Arrival.Waiting(c);
        }
        List<Candidate> all = new ArrayList<>(job.forming.values());
        job.forming.clear();
        return new Arrival.Complete(c, all);
    }

    /** A job that formed could not start (the producer had finished, say): its name is free again. */
    void forget(String job) {
        Job j = jobs.get(job);
        if (j != null && j.running.isEmpty()) {
            jobs.remove(job);
        }
    }

    /** {@code s}, a rank of {@code job}, was admitted. */
    void admitted(String job, ConsumerSession s) {
        jobs.computeIfAbsent(job, j -> new Job(j, s.hello.worldSize(), 0))
                .running
                .put(s.hello.rank(), s);
    }

    /** A job that did not form in time: its waiting ranks, taken off the roster, and what to tell them. */
    record Expiry(List<Candidate> ranks, String message) {}

    /** The expiry of {@code c}'s job if its time is up at {@code now} and it has not formed, else null. */
    Expiry expire(Candidate c, long now) {
        Job job = jobs.get(c.hello.job());
        if (job == null || !job.forming.containsValue(c) || now < job.deadlineNanos) {
            return null;
        }
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < job.worldSize; r++) {
            if (!job.forming.containsKey(r)) {
                missing.add(r);
            }
        }
        jobs.remove(job.name);
        return new Expiry(
                new ArrayList<>(job.forming.values()),
                "job '" + job.name + "' on producer '" + producer
                        + "' did not form: " + (missing.size() == 1 ? "rank " : "ranks ") + ranks(missing) + " of "
                        + job.worldSize + " did not join within " + timeoutNanos / 1_000_000_000L
                        + " s (the producer's job"
                        + " timeout, --job-timeout-s); start all of the job's ranks, each with its own RANK and the same"
                        + " WORLD_SIZE");
    }

    /** {@code c} went away before its job formed: its rank is free again. */
    void withdraw(Candidate c) {
        Job job = jobs.get(c.hello.job());
        if (job != null && job.forming.remove(c.hello.rank(), c) && job.forming.isEmpty() && job.running.isEmpty()) {
            jobs.remove(job.name);
        }
    }

    /**
     * {@code s} left ({@code why}; {@code clean} if it said goodbye or stood at an epoch's end). Returns the ranks of its job to fail, with the
     * message to fail them with, or an empty list.
     */
    Failure left(ConsumerSession s, String why, boolean clean) {
        if (!s.hello.inJob()) {
            return Failure.NONE;
        }
        Job job = jobs.get(s.hello.job());
        if (job == null || job.running.get(s.hello.rank()) != s) {
            return Failure.NONE;
        }
        job.running.remove(s.hello.rank());
        if (job.running.isEmpty() && job.forming.isEmpty()) {
            jobs.remove(job.name);
        }
        if (clean || job.running.isEmpty()) {
            return Failure.NONE;
        }
        List<ConsumerSession> others = new ArrayList<>(job.running.values());
        job.running.clear();
        jobs.remove(job.name);
        return new Failure(
                others,
                "rank " + s.hello.rank() + " of job '" + job.name + "' (pid " + s.hello.pid()
                        + ") left producer '" + producer + "' without saying goodbye (" + why
                        + "), so the job cannot go on;"
                        + " restart all of its ranks");
    }

    /** Ranks to fail and why. */
    record Failure(List<ConsumerSession> ranks, String message) {
        static final Failure NONE = new Failure(List.of(), null);
    }

    private static String ranks(Iterable<Integer> ranks) {
        StringBuilder b = new StringBuilder();
        for (Integer r : ranks) {
            b.append(b.isEmpty() ? "" : ", ").append(r);
        }
        return b.toString();
    }
}
