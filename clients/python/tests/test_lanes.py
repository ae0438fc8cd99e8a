"""Lanes from the Python consumer's side: its stream's move to a lane (giving back the batches it has not begun) and
back to the main stream, and, against a real producer, a slow Python consumer moved to a lane of its own while a
fast Java consumer reads on, every epoch of both one pass over the data set."""
import os
import subprocess
import tempfile
import time
import unittest

from bench_launcher import launcher_or_skip

from tensorsocket_client import stream as _stream

LANE = 1 << 40


class MoveTest(unittest.TestCase):
    """The example of the Java ConsumerStreamTest: 14 samples an epoch, producer batches of 4, consumer batches of 6."""

    def test_a_move_gives_back_what_it_has_not_begun_and_takes_the_lanes_next(self):
        c = _stream.ConsumerStream(_stream.StreamGeometry(14, 4), 8, 6, False, 0, 0)
        c.begin_epoch()
        for i in range(3):
            c.accept(_stream.BatchPosition(i, 0, i, 4 * i, 4), i)
        c.take(c.next_batch())  # samples 0..5: batch 0 consumed, batch 1 begun, batch 2 not
        self.assertEqual(8, c.move_to(LANE, LANE, 8, 4, True))
        with self.assertRaises(ValueError):
            c.accept(_stream.BatchPosition(LANE, 0, 2, 8, 4), 1)  # the lane's batch lies in its slot seq - seqBase
        c.accept(_stream.BatchPosition(LANE, 0, 2, 8, 4), 0)
        self.assertEqual(6, c.next_batch())
        plan = c.take(6)
        self.assertEqual([_stream.Piece(1, 1, 2, 2, 0), _stream.Piece(LANE, 8, 0, 4, 2)], list(plan.pieces))
        self.assertEqual([0, 1, LANE], [c.poll_releasable() for _ in range(3)])

    def test_one_that_caught_up_moves_back_keeping_everything(self):
        c = _stream.ConsumerStream(_stream.StreamGeometry(14, 4), 8, 4, False, 0, 0)
        c.begin_epoch()
        c.move_to(2 * LANE, 2 * LANE, 8, 4, True)
        c.accept(_stream.BatchPosition(2 * LANE, 0, 0, 0, 4), 0)
        c.accept(_stream.BatchPosition(2 * LANE + 1, 0, 1, 4, 4), 1)
        self.assertEqual(8, c.move_to(9, 0, 0, 8, False))
        c.accept(_stream.BatchPosition(9, 0, 2, 8, 4), 1)  # the main stream's batch 9 in its slot 9 % 8
        self.assertEqual(4, c.next_batch())
        self.assertEqual([_stream.Piece(2 * LANE, 8, 0, 4, 0)], list(c.take(4).pieces))


def _state(consumer):
    """What a consumer that failed had received and held: where a lane's batches stopped."""
    if consumer is None:
        return "not connected"
    s = consumer._stream
    held = [(h.seq, h.start, h.consumed, h.end, h.pinned) for h in s.held]
    return ("epoch %d at %d, received up to %d, next seq %d (seq base %d, slot base %d, %d ring slots), handoff %s, "
            "held (seq, start, consumed, end, pinned) %s" % (s.epoch, s.position, s.received_up_to, s.expected_seq,
                                                            s.seq_base, s.slot_base, s.ring_slots, consumer.handoff,
                                                            held))


class LiveLaneTest(unittest.TestCase):
    def test_a_slow_python_consumer_reads_from_a_lane_and_every_epoch_is_exact(self):
        launcher = launcher_or_skip(self)
        from tensorsocket_client import TensorConsumer
        from tensorsocket_client._status import query
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as base:
            env = dict(os.environ, TENSORSOCKET_BASE=base)
            os.environ["TENSORSOCKET_BASE"] = base
            try:
                producer = subprocess.Popen(
                    [launcher, "serve", "--name", "pylane", "--synthetic", "samples=1500,shape=4,dtype=float32,seed=8",
                     "--batch-size", "10", "--epochs", "3", "--slots", "16", "--min-consumers", "2",
                     "--start-grace-ms", "0", "--lane-idle-cores", "0"],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                fast = subprocess.Popen([launcher, "consume", "--name", "pylane", "--batch-size", "10"], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                lanes = set()
                c = None
                try:
                    with TensorConsumer("pylane", batch_size=10, connect_timeout=60) as c:
                        for epoch in range(3):
                            ids = []
                            for batch in c:
                                ids.extend(int(i) for i in batch["id"])
                                time.sleep(0.004)
                                status = query("pylane")
                                if status is not None:
                                    lanes.update(s.lane for s in status.consumers if s.pid == os.getpid())
                            self.assertEqual(list(range(1500)), sorted(ids), "epoch %d is one pass" % epoch)
                except Exception as e:  # what the producer said, beside what went wrong here
                    producer.kill()
                    raise AssertionError("%s\nlanes seen %s; this consumer: %s; the producer's log:\n%s"
                                         % (e, lanes, _state(c), producer.communicate(timeout=30)[1])) from e
                out, err = fast.communicate(timeout=60)
                self.assertEqual(0, fast.returncode, err)
                self.assertEqual(3, out.count('"complete": true'), out)
                _, log = producer.communicate(timeout=60)
                self.assertTrue(any(lane > 0 for lane in lanes), "the slow consumer read from a lane: %s\n%s"
                                % (lanes, log))
                self.assertIn("(pid %d, batch size 10) to lane" % os.getpid(), log)
            finally:
                del os.environ["TENSORSOCKET_BASE"]
                for p in (producer, fast):
                    if p.poll() is None:
                        p.kill()

    def test_a_move_to_a_lane_whose_arena_is_gone_says_so(self):
        launcher = launcher_or_skip(self)
        from tensorsocket_client import TensorConsumer, wire
        from tensorsocket_client.errors import ProducerGone
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as base:
            env = dict(os.environ, TENSORSOCKET_BASE=base)
            os.environ["TENSORSOCKET_BASE"] = base
            producer = subprocess.Popen(
                [launcher, "serve", "--name", "gone", "--synthetic", "samples=60,shape=4,dtype=float32,seed=9",
                 "--batch-size", "10", "--epochs", "1", "--start-grace-ms", "0"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                with TensorConsumer("gone", batch_size=10, connect_timeout=60) as c:
                    # as a producer would move it, to a lane whose arena someone removed (a `clean`, say)
                    with self.assertRaises(ProducerGone) as raised:
                        c._handle(wire.Move(9, 16, 9 << 40))
                lane = os.path.join(base, "gone", "lane-9")
                self.assertEqual("producer 'gone' moved this consumer to lane 9, whose arena %s is gone" % lane,
                                 str(raised.exception))
            finally:
                del os.environ["TENSORSOCKET_BASE"]
                producer.kill()
                producer.wait()

if __name__ == "__main__":
    unittest.main()
