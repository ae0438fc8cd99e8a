"""How a consumer waits for a producer that is not there yet: jobs are launched together, and the
producer (a feeder that imports torch and starts the Java producer) often comes last."""

import logging
import time

PROGRESS_AFTER = 3.0
"""Seconds a consumer waits quietly for its producer before it says, once, what it waits for."""

DEFAULT_CONNECT_TIMEOUT = 60.0
"""Seconds a consumer waits for its producer to appear and answer: a feeder imports torch, starts the
producer's JVM and loads its first batch first (3 to 5 s alone on 2 cores, several times that while
trainers import torch beside it); the progress line after PROGRESS_AFTER names what runs, so a mistyped
name costs attention only once."""

_log = logging.getLogger("tensorsocket_client")


class Waiting:
    """A deadline for one wait, and its progress line (a WARNING of the ``tensorsocket_client`` logger, which
    Python prints to stderr while the application configured no logging)."""

    def __init__(self, what: str, timeout: float):
        self.what = what
        self.timeout = timeout
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.announced = False

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def within(self) -> str:
        return " within %.0f s (the connect timeout; raise it to wait longer)" % self.timeout

    def note(self, state: str, running=None) -> None:
        """Says once, after PROGRESS_AFTER, what the wait is for; ``running()`` (asked only then) lists what runs."""
        if not self.announced and time.monotonic() - self.started >= PROGRESS_AFTER:
            self.announced = True
            also = "; running: %s" % (running(),) if running is not None else ""
            _log.warning("waiting for %s to appear: %s%s; waiting up to %.0f s in all", self.what, state, also,
                         self.timeout)
