"""A Ctrl-C that Python drops because it came while a function run at a fork was running (as when a DataLoader starts
its workers) still stops a feeder: InterruptWatch alone, and a feeder feeding a live producer."""
import os
import signal
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

import numpy as np

from tensorsocket_client import TensorConsumer, TensorProducer
from tensorsocket_client._interrupts import InterruptWatch
from tensorsocket_client.errors import TensorSocketError

_ARMED = [False]


def _interrupt_in_fork_hook():
    if _ARMED[0]:
        _ARMED[0] = False
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs here, inside the hook, and CPython drops what it raises


os.register_at_fork(after_in_parent=_interrupt_in_fork_hook)


def fork_losing_a_ctrl_c():
    """Forks a child that exits at once, a Ctrl-C arriving in the parent's after-fork hook; returns what CPython
    reported as raised and ignored there."""
    dropped = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: dropped.append(u.exc_type)
    try:
        _ARMED[0] = True
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    finally:
        sys.unraisablehook = hook
    return dropped


class InterruptWatchTest(unittest.TestCase):
    def setUp(self):
        # as a terminal has it: a background job of a non-interactive shell starts with SIGINT ignored
        self.before = signal.signal(signal.SIGINT, signal.default_int_handler)

    def tearDown(self):
        signal.signal(signal.SIGINT, self.before)

    def test_python_drops_a_ctrl_c_that_comes_during_a_fork_hook(self):
        self.assertEqual([KeyboardInterrupt], fork_losing_a_ctrl_c())  # and nothing raised here

    def test_the_watch_raises_the_lost_ctrl_c_at_its_next_check_and_only_once(self):
        with InterruptWatch() as watch:
            self.assertIsNot(signal.default_int_handler, signal.getsignal(signal.SIGINT))
            self.assertEqual([KeyboardInterrupt], fork_losing_a_ctrl_c())
            with self.assertRaises(KeyboardInterrupt):
                watch.check()
            watch.check()
        self.assertIs(signal.default_int_handler, signal.getsignal(signal.SIGINT))

    def test_a_ctrl_c_while_the_callers_code_runs_is_the_callers(self):
        with InterruptWatch() as watch:
            watch.pause()
            with self.assertRaises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            watch.resume()
            watch.check()

    def test_a_handler_the_program_set_is_left_alone(self):
        def own(signum, frame):
            pass
        signal.signal(signal.SIGINT, own)
        with InterruptWatch() as watch:
            self.assertIs(own, signal.getsignal(signal.SIGINT))
            watch.check()
        self.assertIs(own, signal.getsignal(signal.SIGINT))

    def test_a_feeder_stops_on_a_ctrl_c_lost_while_its_loader_forks(self):
        from tensorsocket_client.directory import launcher_command
        if launcher_command() is None:
            self.skipTest("no tensorsocket launcher (build the command line first)")

        def loader():
            for i in range(10):
                if i == 3:
                    self.assertEqual([KeyboardInterrupt], fork_losing_a_ctrl_c())
                yield np.full((4, 2), i, np.float32)

        told = []
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d, \
                mock.patch.dict(os.environ, {"TENSORSOCKET_BASE": d}):
            feeder = TensorProducer("lostctrlc", loader(), epochs=1, samples_per_epoch=40, start_grace=0, slots=16)

            def consume():
                try:
                    with TensorConsumer("lostctrlc", batch_size=4, connect_timeout=60, batch_timeout=60) as c:
                        for _ in c:
                            pass
                except TensorSocketError as e:
                    told.append(str(e))

            reader = threading.Thread(target=consume, daemon=True)
            reader.start()
            with self.assertRaises(KeyboardInterrupt):
                for _ in feeder:
                    pass
            reader.join(60)
        self.assertEqual(3, feeder.batches_published)
        self.assertIs(signal.default_int_handler, signal.getsignal(signal.SIGINT))
        self.assertEqual(1, len(told), "the consumer was told why the stream stopped")
        self.assertIn("was interrupted (Ctrl-C)", told[0])


if __name__ == "__main__":
    unittest.main()
