package io.tensorsocket.producer;

import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.stream.StartPoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ranks of data-parallel jobs as they join and leave a producer: a rank that says HELLO is refused, waits for
 * the rest of its job (heartbeats keep it and the producer aware of each other meanwhile), or completes its job,
 * whose ranks are then admitted together at one start; a job that does not form in time, or one of whose running
 * ranks dies, fails for all its ranks, each told which rank it was. What a job's arrivals and departures mean is
 * {@link JobRoster}'s; this class sends the refusals, heartbeats and failures, and admits through the core.
 *
 * <p>Called under the core's lock, except {@link #await}, which takes it for each heartbeat.
 */
final class JobFormation {
    private static final Logger log = LoggerFactory.getLogger(ProducerCore.class);

    /** What forming a job needs of the producer's core; each is called under the core's lock. */
    interface Joins {
        /** What a consumer asking to join is told once the producer closes, or null while it serves. */
        Message.Error refusalWhileClosing();

        /** Whether a consumer that says {@code hello} may join now, and where it would start. */
        Admission.Verdict admit(Message.Hello hello);

        /** {@code start} for {@code n} consumers joining together, as a relay's upstream allows it. */
        StartPoint throughUpstream(StartPoint start, int n);

        /** A consumer admitted at {@code start} never attached: the upstream boundary kept for it goes. */
        void releaseUpstream(StartPoint start);

        /** Welcomes an admitted consumer; null if it cannot be reached. */
        ConsumerSession welcome(
                int id,
                MessageChannel channel,
                Message.Hello hello,
                String user,
                StartPoint start,
                Function<StartPoint, Message.Welcome> welcome);

        /** Removes an attached consumer, releasing what it held. */
        void detach(ConsumerSession s, String why);
    }

    private final JobRoster roster;
    private final ReentrantLock lock;
    private final Joins core;

    JobFormation(JobRoster roster, ReentrantLock lock, Joins core) {
        this.roster = roster;
        this.lock = lock;
        this.core = core;
    }

    /**
     * A rank of a job said HELLO: refused (an error was sent; null), or a candidate that waits for the rest of its
     * job ({@link #await}). The rank that completes its job admits all of them here, at one start.
     */
    JobRoster.Candidate arrive(
            int id,
            MessageChannel channel,
            Message.Hello hello,
            String user,
            Function<StartPoint, Message.Welcome> welcome) {
        Message.Error closing = core.refusalWhileClosing();
        JobRoster.Arrival arrival = closing != null ? null : roster.arrive(id, channel, hello, user, System.nanoTime());
        switch (arrival) {
            case null -> {
                channel.sendQuietly(closing);
                channel.close();
                return null;
            }
            case JobRoster.Arrival.Refused(String why) -> {
                log.warn("refusing rank {} of job '{}' (pid {}): {}", hello.rank(), hello.job(), hello.pid(), why);
                channel.sendQuietly(new Message.Error(Message.ErrorCode.BAD_REQUEST, why));
                channel.close();
                return null;
            }
            case JobRoster.Arrival.Waiting(JobRoster.Candidate c) -> {
                log.info(
                        "rank {} of job '{}' (pid {}) waits for the rest of its job's {} ranks",
                        hello.rank(),
                        hello.job(),
                        hello.pid(),
                        hello.worldSize());
                return c;
            }
            case JobRoster.Arrival.Complete(JobRoster.Candidate c, List<JobRoster.Candidate> ranks) -> {
                start(ranks, welcome);
                return c;
            }
        }
    }

    /** Admits every rank of a job that formed at one start, or refuses them all alike. */
    private void start(List<JobRoster.Candidate> ranks, Function<StartPoint, Message.Welcome> welcome) {
        Admission.Verdict verdict = core.admit(ranks.getFirst().hello);
        if (verdict instanceof Admission.Verdict.Refused(Message.Error refusal)) {
            for (JobRoster.Candidate c : ranks) {
                c.channel.sendQuietly(refusal);
                c.channel.close();
                c.admitted.complete(null);
            }
            roster.forget(ranks.getFirst().hello.job());
            return;
        }
        StartPoint start = core.throughUpstream(((Admission.Verdict.Admitted) verdict).start(), ranks.size());
        log.info(
                "job '{}' formed: its {} ranks start together",
                ranks.getFirst().hello.job(),
                ranks.size());
        List<ConsumerSession> admitted = new ArrayList<>();
        String unreachable = null;
        for (JobRoster.Candidate c : ranks) {
            ConsumerSession s = core.welcome(c.id, c.channel, c.hello, c.user, start, welcome);
            if (s == null) {
                core.releaseUpstream(start);
                unreachable = unreachable != null
                        ? unreachable
                        : "rank " + c.hello.rank() + " of job '" + c.hello.job() + "' (pid " + c.hello.pid()
                                + ") went away before its job started; restart all of its ranks";
            } else {
                roster.admitted(c.hello.job(), s);
                admitted.add(s);
            }
            c.admitted.complete(s);
        }
        if (unreachable != null) {
            for (ConsumerSession s : admitted) {
                fail(s, unreachable);
            }
        }
    }

    /**
     * Waits, on {@code c}'s own connection thread, until its job formed (its session: it was admitted; null: it was
     * refused and told, went away, its job timed out, or the producer closed). Sends it a heartbeat every second
     * meanwhile, so that it knows the producer lives and the producer notices it leave.
     */
    ConsumerSession await(JobRoster.Candidate c) throws InterruptedException {
        while (true) {
            try {
                return c.admitted.get(ProducerServer.HEARTBEAT_NANOS, TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                return null;
            } catch (TimeoutException e) {
                lock.lock();
                try {
                    stillWaiting(c);
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    private void stillWaiting(JobRoster.Candidate c) {
        if (!c.waiting()) {
            return;
        }
        Message.Error closing = core.refusalWhileClosing();
        if (closing != null) {
            roster.withdraw(c);
            drop(c, closing);
            return;
        }
        JobRoster.Expiry expiry = roster.expire(c, System.nanoTime());
        if (expiry != null) {
            log.warn(expiry.message());
            for (JobRoster.Candidate other : expiry.ranks()) {
                drop(other, new Message.Error(Message.ErrorCode.JOB_FAILED, expiry.message()));
            }
        } else if (!sent(c.channel, new Message.Heartbeat())) {
            log.info(
                    "rank {} of job '{}' (pid {}) went away before its job formed",
                    c.hello.rank(),
                    c.hello.job(),
                    c.hello.pid());
            roster.withdraw(c);
            drop(c, null);
        }
    }

    /** An attached consumer left: if it was a rank of a running job that died, the job's other ranks fail too. */
    void left(ConsumerSession s, String why) {
        boolean goodbye = ConsumerReader.GOODBYE.equals(why);
        boolean atEpochEnd = s.leftAfterEpochs > 0;
        if (!goodbye && atEpochEnd && s.hello.inJob()) {
            log.info(
                    "{} left after {} whole epochs without saying goodbye, as a script that simply ends does: not a"
                            + " failure of its job",
                    s.describe(),
                    s.leftAfterEpochs);
        }
        JobRoster.Failure f = roster.left(s, why, goodbye || atEpochEnd);
        for (ConsumerSession other : f.ranks()) {
            fail(other, f.message());
        }
    }

    private void fail(ConsumerSession s, String message) {
        log.warn("{} fails with its job: {}", s.describe(), message);
        s.send(new Message.Error(Message.ErrorCode.JOB_FAILED, message));
        core.detach(s, "its job failed");
    }

    private static boolean sent(MessageChannel channel, Message m) {
        try {
            channel.send(m);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static void drop(JobRoster.Candidate c, Message.Error error) {
        if (error != null) {
            c.channel.sendQuietly(error);
        }
        c.channel.close();
        c.admitted.complete(null);
    }
}
