"""How ``share()`` starts the process that feeds its producer: forked from the trial, or a new Python.

Either way the feeder is nobody's child: a grandchild of the trial in a session of its own, so the trial's end, Ctrl-C
in its terminal, a kill of its process group, or a Ray worker's exit (Ray kills a finished worker's children) do not
take it along; it lives by its producer's linger. It writes its exit status into a pipe whose other end the trial
watches while it waits for the producer (``Started``).

Forked (the default): the trial has imported torch and the factory's module already, so a child forked from it builds
the loader at once, as DataLoader's workers start; it starts the producer's JVM first, which starts while the loader is
built. The child leaves the trial behind before it does anything else: every descriptor it inherited pointed at
``/dev/null`` (a pipe the trial's parent reads to its end is not held open by the feeder; the numbers stay taken, so an
object of the trial's that the child collects closes nothing of the child's), its output into the share's log, the
default signal handlers, no logging handler of the trial's, and one torch thread (as DataLoader's workers: OpenMP's
pool does not survive a fork). It ends with ``os._exit``, so none of the trial's exit handlers run in it.

A new Python (``python -m tensorsocket_client share-serve``, the slower way: it imports everything again) where fork
cannot serve: ``TENSORSOCKET_SHARE_START=spawn`` (or ``share(..., start_method="spawn")``), no ``os.fork``, a trial
that has initialised CUDA (a forked child cannot use it, and a factory's loader may), or a Ray worker (its gRPC threads
make forking the whole trial unsafe).
"""

import json
import logging
import os
import select
import signal
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional

from . import _share_log

ENV = "TENSORSOCKET_SHARE_START"


def start_method() -> str:
    """``fork`` or ``spawn``, as :data:`ENV` says or, where it says nothing, as this process allows (see above)."""
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
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        return "spawn"
    return "fork"


class Started:
    """The feeder process started for a share, a daemon of nobody's (a grandchild of the trial, in a session of its
    own, so that no process that reaps or kills its children, a Ray worker among them, takes it along): ``poll()`` is
    its exit status once it ended, which it writes into a pipe the trial holds the other end of (-1: it ended without
    saying, killed)."""

    def __init__(self, status_fd: int):
        self._fd = status_fd
        self._code: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self._code is None and select.select([self._fd], [], [], 0)[0]:
            said = os.read(self._fd, 32).strip()
            self._code = int(said) if said.lstrip(b"-").isdigit() else -1
            os.close(self._fd)
        return self._code

    @property
    def returncode(self) -> Optional[int]:
        return self.poll()

    def close(self) -> None:
        """Stops listening for its status (the trial attached; the feeder lives on)."""
        if self._code is None:
            self._code = -2
            os.close(self._fd)


def start(name: str, path: str, kwargs: Dict[str, Any], description: str, linger: float,
          producer_options: Dict[str, Any], log_path, serve: Callable[[], int], method: Optional[str] = None) -> Started:
    """Starts the process that serves share ``name`` (see the module's doc), its output going to ``log_path``;
    ``method`` as :func:`start_method` chooses where None. A forked child calls ``serve`` (it serves the share and
    returns the exit status); a new Python is given the same arguments on its command line."""
    args = ["share-serve", "--name", name, "--factory", path, "--kwargs", json.dumps(kwargs), "--description",
            description, "--linger", repr(linger), "--producer-options", json.dumps(producer_options)]
    method = method or start_method()
    status_r, status_w = os.pipe()
    try:
        with open(log_path, "ab") as log:
            if method == "fork":
                log.write(_share_log.start_entry(os.getpid(), ["(forked)", "tensorsocket_client"] + args))
                log.flush()
                _daemon(lambda: _child(serve, log.fileno(), status_w))
            else:
                cmd = [sys.executable, "-m", "tensorsocket_client"] + args + ["--status-fd", str(status_w)]
                env = dict(os.environ)
                # The factory imports in the producer's process as it does here.
                env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd()] + sys.path if p and os.path.isdir(p))
                log.write(_share_log.start_entry(os.getpid(), cmd))
                log.flush()
                _daemon(lambda: _exec(cmd, env, log.fileno(), status_w))
    finally:
        os.close(status_w)
    return Started(status_r)


def _daemon(run) -> None:
    """Runs ``run`` (which never returns) in a grandchild in a session of its own; reaps the child in between."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                run()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _exec(cmd: List[str], env: Dict[str, str], log_fd: int, status_fd: int) -> None:
    """The new Python's way: standard streams onto the log and /dev/null, then exec (only the status pipe and the
    standard streams cross it: every other descriptor is close-on-exec, as Python opens them)."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.set_inheritable(status_fd, True)
        os.execve(cmd[0], cmd, env)
    finally:
        os._exit(127)


def _child(serve: Callable[[], int], log_fd: int, status_fd: int) -> None:
    """The forked feeder: leaves the trial behind, serves the share, writes its exit status, and exits without running
    the trial's handlers."""
    code = 1
    try:
        _leave_the_trial(log_fd, status_fd)
        code = serve()
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
        write_status(status_fd, code)
        os._exit(code)


def write_status(fd: int, code: int) -> None:
    """Tells the trial that started this feeder how it ended (it may have gone: then nobody listens)."""
    try:
        os.write(fd, b"%d\n" % code)
    except OSError:
        pass


def _leave_the_trial(log_fd: int, status_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.dup(log_fd)
    for fd in _open_descriptors():
        if fd > 2 and fd not in (devnull, log, status_fd):
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
