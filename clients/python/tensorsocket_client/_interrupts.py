"""A Ctrl-C that reaches a feeder while it feeds, kept even where Python loses it.

CPython runs a signal's handler the next time its main thread runs Python code. When that code is a function run at
a fork (``os.register_at_fork``; the logging module registers one), as it is each time a DataLoader starts its
workers, the KeyboardInterrupt the handler raises is printed as "Exception ignored in ..." and dropped, and the
feeder would feed on. While a feeder runs its own code, :class:`InterruptWatch` stands in front of Python's default
SIGINT handler: it notes the Ctrl-C, then lets the default handler raise as before; the feeder calls
:meth:`InterruptWatch.check` after each batch it takes from its loader, which raises the KeyboardInterrupt that
was lost. A Ctrl-C while the caller's own code runs (between the batches it is handed) is the caller's alone.
"""
import signal
import threading
from types import FrameType, TracebackType
from typing import Any, Optional, Type


class InterruptWatch:
    """Notes Ctrl-C (SIGINT) while open and :meth:`resume`-d; installed only in the main thread, and only over
    Python's default handler (a handler the program set itself is left alone)."""

    def __init__(self) -> None:
        self._noted = False
        self._inside = True
        self._previous: Any = None
        self._handler = self._on_interrupt  # one bound method, to know it again when restoring

    def __enter__(self) -> "InterruptWatch":
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._previous is not None and signal.getsignal(signal.SIGINT) is self._handler:
            signal.signal(signal.SIGINT, self._previous)
        self._previous = None

    def pause(self) -> None:
        """The caller's code runs from here (a Ctrl-C there is not noted) until :meth:`resume`."""
        self._inside = False

    def resume(self) -> None:
        self._inside = True

    def _on_interrupt(self, signum: int, frame: Optional[FrameType]) -> None:
        if self._inside:
            self._noted = True
        signal.default_int_handler(signum, frame)

    def check(self) -> None:
        """Raises KeyboardInterrupt for a Ctrl-C noted since the last check (one that was delivered has ended the
        feeding already: only a lost one gets here)."""
        if self._noted:
            self._noted = False
            raise KeyboardInterrupt
