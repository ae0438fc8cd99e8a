package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.StartPolicy;
import io.tensorsocket.protocol.Message;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What each rank's arrival and departure means for its job: forming, refusals, expiry, failure, a free name. */
class JobRosterTest {
    private static final long S = 1_000_000_000L;
    private final JobRoster roster = new JobRoster("p", Duration.ofSeconds(10));

    private static Message.Hello rank(String job, int rank, int world) {
        return new Message.Hello(8, false, 100 + rank, "test", StartPolicy.JOIN_NOW, false, job, rank, world);
    }

    private JobRoster.Arrival arrive(Message.Hello h, long now) {
        return roster.arrive(h.rank(), null, h, "u", now);
    }

    private ConsumerSession admit(JobRoster.Candidate c) {
        ConsumerSession s = new ConsumerSession(c.id, null, c.hello);
        roster.admitted(c.hello.job(), s);
        return s;
    }

    @Test
    void aJobFormsOnceAllItsRanksArrivedInAnyOrderAndRefusesWhatCannotBelong() {
        assertInstanceOf(JobRoster.Arrival.Waiting.class, arrive(rank("j", 2, 3), 0));
        assertTrue(((JobRoster.Arrival.Refused) arrive(rank("j", 1, 4), S))
                .why()
                .contains("rank 1 of job 'j' says the job has 4 ranks, but its ranks 2 say 3"));
        assertTrue(((JobRoster.Arrival.Refused) arrive(rank("j", 2, 3), S))
                .why()
                .contains("rank 2 of job 'j' joined already (pid 102)"));
        assertInstanceOf(JobRoster.Arrival.Waiting.class, arrive(rank("j", 0, 3), S));
        JobRoster.Arrival done = arrive(rank("j", 1, 3), 2 * S);
        List<JobRoster.Candidate> ranks = ((JobRoster.Arrival.Complete) done).ranks();
        assertEquals(List.of(0, 1, 2), ranks.stream().map(c -> c.hello.rank()).toList());
        ranks.forEach(this::admit);
        assertTrue(((JobRoster.Arrival.Refused) arrive(rank("j", 1, 3), 3 * S))
                .why()
                .contains("job 'j' started already (its ranks 0, 1, 2 are reading)"));
    }

    @Test
    void aJobWhoseRanksDoNotAllComeExpiresNamingThemAndItsNameIsFreeAgain() {
        JobRoster.Candidate c = ((JobRoster.Arrival.Waiting) arrive(rank("j", 1, 4), 0)).candidate();
        arrive(rank("j", 3, 4), S);
        assertNull(roster.expire(c, 9 * S));
        JobRoster.Expiry e = roster.expire(c, 10 * S);
        assertEquals(2, e.ranks().size());
        assertTrue(e.message().contains("ranks 0, 2 of 4 did not join within 10 s"), e.message());
        assertInstanceOf(JobRoster.Arrival.Waiting.class, arrive(rank("j", 0, 2), 11 * S));
    }

    @Test
    void aRankThatDiesFailsTheOthersWhileOneThatSaysGoodbyeDoesNot() {
        arrive(rank("j", 0, 3), 0);
        arrive(rank("j", 1, 3), 0);
        List<ConsumerSession> s = ((JobRoster.Arrival.Complete) arrive(rank("j", 2, 3), 0))
                .ranks().stream().map(this::admit).toList();
        assertEquals(JobRoster.Failure.NONE, roster.left(s.get(0), ConsumerReader.GOODBYE, true));
        JobRoster.Failure f = roster.left(s.get(2), "connection closed", false);
        assertEquals(List.of(s.get(1)), f.ranks());
        assertTrue(
                f.message()
                        .contains("rank 2 of job 'j' (pid 102) left producer 'p' without saying goodbye"
                                + " (connection closed)"),
                f.message());
        assertEquals(JobRoster.Failure.NONE, roster.left(s.get(1), "its job failed", false)); // failed already
        assertInstanceOf(JobRoster.Arrival.Waiting.class, arrive(rank("j", 0, 2), S)); // the name is free
    }

    @Test
    void aRankWithdrawnBeforeItsJobFormedFreesItsRankAndAForgottenJobItsName() {
        JobRoster.Candidate c = ((JobRoster.Arrival.Waiting) arrive(rank("j", 0, 2), 0)).candidate();
        roster.withdraw(c);
        assertInstanceOf(JobRoster.Arrival.Waiting.class, arrive(rank("j", 0, 3), 0)); // a new job of that name
        arrive(rank("j", 1, 3), 0);
        assertInstanceOf(JobRoster.Arrival.Complete.class, arrive(rank("j", 2, 3), 0));
        roster.forget("j"); // its start was refused
        assertInstanceOf(JobRoster.Arrival.Waiting.class, arrive(rank("j", 0, 5), 0));
    }
}
