"""The Python stream model against the scenarios shared with Java (docs/test-vectors/scenarios.txt), walked
the same way as the Java StreamSimulation, plus random walks checking every sample once and every release once."""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tensorsocket_client import stream as st  # noqa: E402

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "test-vectors", "scenarios.txt")


def simulate(samples, producer_batch, rubber_band, published, epoch_ended, consumer_batch, drop_last, epochs,
             producer_epochs, leave_after, start_policy=st.JOIN_NOW, mid_epoch=st.ROLLING, share=st.ALL):
    """The walk of StreamSimulation.java: returns the event lines, the published batches and the final position."""
    g = st.StreamGeometry(samples, producer_batch)
    slots = 1 << 20
    ps = st.ProducerStream(g)
    out = []

    def publish_one():
        if ps.epoch_complete():
            ps.end_epoch(ps.next_epoch)
        n = min(producer_batch, samples - ps.next_sample)
        out.append(ps.publish(len(out), n))

    for _ in range(published):
        publish_one()
    if epoch_ended and ps.epoch_complete():
        ps.end_epoch(ps.next_epoch)
    start = st.JoinRule(rubber_band, mid_epoch).decide(ps, start_policy)
    events = ["start %s epoch=%d sample=%d retained=%s" % (
        start.mode, start.epoch, start.sample,
        "%d..%d" % (start.first_retained, start.last_retained) if start.retained_count() else "-")]
    c = st.ConsumerStream(g, slots, consumer_batch, drop_last, start.epoch, start.sample, share)
    for q in range(start.first_retained, start.last_retained + 1):
        c.accept(out[q], q % slots)
    nxt = [len(out)]

    def epochs_done():
        return ps.next_epoch + (1 if ps.epoch_complete() else 0)

    def feed():
        if nxt[0] == len(out):
            if producer_epochs > 0 and epochs_done() >= producer_epochs:
                c.end_of_stream()
                return
            publish_one()
        p = out[nxt[0]]
        nxt[0] += 1
        if start.sends(p, g):  # the producer sends nothing before a waiting consumer's start
            c.accept(p, p.seq % slots)

    def releases():
        q = c.poll_releasable()
        while q >= 0:
            events.append("release %d" % q)
            q = c.poll_releasable()

    for _ in range(epochs):
        if c.epoch_started:
            while not c.skip_arrived(c.epoch_end()) and not c.stream_ended:
                releases()
                feed()
            releases()
        c.begin_epoch()
        taken = 0
        while leave_after == 0 or taken < leave_after:
            n = c.next_batch()
            if n == st.NEED_MORE:
                feed()
                continue
            releases()
            if n == 0:
                break
            plan = c.take(n)
            events.append("batch epoch=%d index=%d sample=%d size=%d pieces=%s" % (
                plan.epoch, plan.index, plan.sample_start, plan.samples,
                ",".join("%d:%d+%d" % (p.seq, p.offset, p.samples) for p in plan.pieces)))
            taken += 1
            releases()
            if plan.single:
                c.unpin(plan.pieces[0].seq)
            releases()
        events.append("end epoch=%d" % c.epoch)
        if c.stream_ended and c.position >= c.received_up_to:
            break
    return events, out, g, c.position, start


def read_scenarios(path):
    scenarios, cur = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("scenario "):
                words = line.split(" ")
                given = dict(w.split("=", 1) for w in words[2:])
                cur = (words[1], given, [])
            elif line == "end":
                scenarios.append(cur)
                cur = None
            else:
                cur[2].append(line)
    return scenarios


def run_given(given):
    return simulate(int(given["samples"]), int(given["producer_batch"]), int(given["rubber_band"]),
                    int(given["published"]), given["epoch_ended"] == "yes", int(given["consumer_batch"]),
                    given["drop_last"] == "yes", int(given["epochs"]), int(given["producer_epochs"]),
                    int(given["leave_after"]), given.get("start_policy", st.JOIN_NOW),
                    given.get("mid_epoch", st.ROLLING), st.RankShare(*map(int, given.get("rank", "0/1").split("/"))))


class SharedScenariosTest(unittest.TestCase):
    def test_the_python_model_sees_what_the_shared_scenarios_say(self):
        scenarios = read_scenarios(VECTORS)
        self.assertGreaterEqual(len(scenarios), 10)
        for name, given, expected in scenarios:
            with self.subTest(scenario=name):
                self.assertEqual(expected, run_given(given)[0])


class RandomWalksTest(unittest.TestCase):
    def test_every_sample_once_in_order_and_every_batch_released_once(self):
        rnd = random.Random(11)
        for _ in range(400):
            spe, pb, rb = rnd.randint(1, 40), rnd.randint(1, 9), rnd.randint(0, 5)
            published, ended = rnd.randint(0, 25), rnd.random() < 0.5
            cb, drop, epochs = rnd.randint(1, 45), rnd.random() < 0.5, rnd.randint(1, 3)
            events, out, g, final, start = simulate(spe, pb, rb, published, ended, cb, drop, epochs, 0, 0)
            pos = base = g.position(start.epoch, start.sample)
            handed, released = 0, []
            for e in events[1:]:
                w = e.split(" ")
                if w[0] == "batch":
                    for piece in w[5].split("=")[1].split(","):
                        seq, rest = piece.split(":")
                        off, n = map(int, rest.split("+"))
                        self.assertEqual(pos, out[int(seq)].start(g) + off)
                        pos += n
                        handed += n
                elif w[0] == "release":
                    released.append(int(w[1]))
                elif w[0] == "end":
                    self.assertEqual(spe // cb * cb if drop else spe, handed, events)
                    base += spe
                    pos, handed = base, 0
            first = start.first_retained if start.retained_count() else published
            self.assertEqual(list(range(first, first + len(released))), released)
            passed = sum(1 for b in out if b.seq >= first and b.end(g) <= final)
            self.assertEqual(passed, len(released))


if __name__ == "__main__":
    unittest.main()


class CheckpointDrawsTest(unittest.TestCase):
    """The draws a checkpoint carries: from the fresh draw its epoch's orders follow on (see the Java DrawsFile)."""

    def test_the_chain_starts_at_the_fresh_draw_and_stops_at_the_last_drawn(self):
        from tensorsocket_client._checkpoint import chain
        draws = [(0, []), (1, [300]), (2, [300, 40]), (3, []), (4, [7])]
        self.assertEqual([0, 0, 1, 1, 300, 2, 2, 300, 40], chain(draws, 2, 2))
        self.assertEqual([3, 0, 4, 1, 7], chain(draws, 4, 5), "epoch 5 is not drawn yet")
        self.assertEqual([], chain(draws, 6, 6), "an epoch not drawn yet: nothing to replay")
        self.assertEqual([0, 0, 1, 1, 300], chain(draws, 1, 1))
