"""How ``share()`` starts the process that feeds its producer: forked from the trial, or a new Python.

Forked (the default on Linux): the trial has imported torch and the factory's module already, so a child forked from it
builds the loader at once, as DataLoader's workers start; it starts the producer's JVM first, which starts while the
loader is built. The child leaves the trial behind before it does anything else: a session of its own (the trial's
end, Ctrl-C in its terminal or a kill of its process group do not reach it), every descriptor it inherited pointed at
``/dev/null`` (a pipe the trial's parent reads to its end is not held open by the feeder; the numbers stay taken, so an
object of the trial's that the child collects closes nothing of the child's), its output into the share's log, the
default signal handlers, no logging handler of the trial's, and one torch thread (as DataLoader's workers: OpenMP's
pool does not survive a fork). It ends with ``os._exit``, so none of the trial's exit handlers run in it.

A new Python (``python -m tensorsocket_client share-serve``, the slower way: it imports everything again) where fork
cannot serve: ``TENSORSOCKET_SHARE_START=spawn``, no ``os.fork``, or a trial that has initialised CUDA (a forked child
cannot use it, and a factory's loader may).
"""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
from typing import Any, Dict, List, Optional

from . import _share_log

ENV = "TENSORSOCKET_SHARE_START"


def start_method() -> str:
    """``fork`` or ``spawn``, as :data:`ENV` says or, where it says nothing, as this process allows."""
    chosen = os.environ.get(ENV, "").strip().lower()
    if chosen in ("fork", "spawn"):
        return chosen
    if chosen:
        raise ValueError("%s=%s: say fork or spawn (or leave it unset: fork where it can serve)" % (ENV, chosen))
    if not hasattr(os, "fork"):
        return "spawn"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        return "spawn"
    return "fork"


class Started:
    """The feeder process started for a share: its pid, and its exit status once it ended (``poll()``)."""

    def __init__(self, pid: int, popen: Optional[subprocess.Popen] = None):
        self.pid = pid
        self._popen = popen
        self._code: Optional[int] = None
        if popen is None:  # a forked child: reaped by a thread of its own, whenever it ends
            threading.Thread(target=self._reap, name="tensorsocket-share-reaper", daemon=True).start()

    def _reap(self) -> None:
        try:
            _, status = os.waitpid(self.pid, 0)
            self._code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # another part of the program reaped it: its status is lost
            self._code = -1

    def poll(self) -> Optional[int]:
        return self._popen.poll() if self._popen is not None else self._code

    @property
    def returncode(self) -> Optional[int]:
        return self.poll()


def start(name: str, path: str, kwargs: Dict[str, Any], description: str, linger: float,
          producer_options: Dict[str, Any], log_path) -> Started:
    """Starts the process that serves share ``name`` (see the module's doc), its output going to ``log_path``."""
    args = ["share-serve", "--name", name, "--factory", path, "--kwargs", json.dumps(kwargs), "--description",
            description, "--linger", repr(linger), "--producer-options", json.dumps(producer_options)]
    method = start_method()
    with open(log_path, "ab") as log:
        if method == "fork":
            log.write(_share_log.start_entry(os.getpid(), ["(forked)", "tensorsocket_client"] + args))
            log.flush()
            pid = os.fork()
            if pid == 0:
                _child(name, path, kwargs, description, linger, producer_options, log.fileno())
            return Started(pid)
        cmd = [sys.executable, "-m", "tensorsocket_client"] + args
        env = dict(os.environ)
        # The factory imports in the producer's process as it does here.
        env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd()] + sys.path if p and os.path.isdir(p))
        log.write(_share_log.start_entry(os.getpid(), cmd))
        log.flush()
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                 start_new_session=True, close_fds=True)
        return Started(popen.pid, popen)


def _child(name, path, kwargs, description, linger, producer_options, log_fd) -> None:
    """The forked child: leaves the trial behind, serves the share, and exits without running the trial's handlers."""
    code = 1
    try:
        _leave_the_trial(log_fd)
        from .share import serve
        code = serve(name, path, kwargs, description, linger, producer_options)
    except KeyboardInterrupt:
        code = 130
    except BaseException as e:  # noqa: BLE001 (everything goes to the log, then the child ends)
        try:
            if isinstance(e, SystemExit):
                code = e.code if isinstance(e.code, int) else 1
            else:
                print("tensorsocket: error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
                traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(code)


def _leave_the_trial(log_fd: int) -> None:
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.dup(log_fd)
    for fd in _open_descriptors():
        if fd > 2 and fd not in (devnull, log):
            try:
                os.dup2(devnull, fd, inheritable=False)
            except OSError:
                pass
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdin = open(0, "r", closefd=False)  # noqa: SIM115 (the child's standard streams, for its whole life)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(1)


def _open_descriptors() -> List[int]:
    try:
        return [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))
