"""The Java producer a feeder starts for itself: the serve options its keyword arguments become, its process (in a
session of its own, so that Ctrl-C reaches the feeder, which stops it cleanly), and stopping one that never served."""

import os
import signal
import subprocess
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ._feeder_link import FeederError
from .directory import FEEDER_SOCKET_FILE, SOCKET_FILE, directory_for, is_locked, launcher_command

# What a feeder can set of the producer it starts, and the serve option each becomes.
_PRODUCER_OPTIONS: Dict[str, Tuple[str, Callable[[Any], Any]]] = {
    "min_consumers": ("--min-consumers", int),
    "rubber_band": ("--rubber-band", int),
    "start_grace": ("--start-grace-ms", lambda s: int(round(float(s) * 1000))),
    "stall_timeout": ("--stall-timeout-s", float),
    "idle_timeout": ("--idle-timeout-s", float),
    "arena_mb": ("--arena-mb", int),
    "slots": ("--slots", int),
    "lanes": ("--lanes", int),
    "lane_idle_cores": ("--lane-idle-cores", float),
}
# Options that are text: where the producer also serves remote consumers over Arrow Flight, and their token.
_TEXT_OPTIONS = {"flight": "--flight", "flight_token_file": "--flight-token-file"}


def serve_args(producer_options: Dict[str, Any]) -> List[str]:
    """The ``serve`` options that a feeder's producer options become; ValueError or TypeError naming a bad one."""
    unknown = sorted(set(producer_options) - set(_PRODUCER_OPTIONS) - set(_TEXT_OPTIONS))
    if unknown:
        raise TypeError("TensorProducer got unknown options %s; producer options are %s"
                        % (unknown, sorted(set(_PRODUCER_OPTIONS) | set(_TEXT_OPTIONS))))
    args = []
    for key, value in producer_options.items():
        if value is None:
            continue
        if key in _TEXT_OPTIONS:
            host, sep, port = str(value).rpartition(":")
            if key == "flight" and not (sep and host and port.isdigit()):
                raise ValueError("flight=%r is not HOST:PORT (e.g. '0.0.0.0:8815')" % (value,))
            args += [_TEXT_OPTIONS[key], str(value)]
            continue
        flag, conv = _PRODUCER_OPTIONS[key]
        try:
            v = conv(value)
        except (TypeError, ValueError):
            raise ValueError("%s=%r is not a number" % (key, value)) from None
        zero_ok = key in ("start_grace", "rubber_band", "lanes", "lane_idle_cores")
        if v < 0 or (v == 0 and not zero_ok):
            raise ValueError("%s=%r must be %s" % (key, value, "0 or more" if zero_ok else "positive"))
        args += [flag, str(v)]
    if "arena_mb" in producer_options and "slots" in producer_options and None not in (
            producer_options["arena_mb"], producer_options["slots"]):
        raise ValueError("give arena_mb or slots, not both")
    return args


# The producer a feeder starts compiles with C1 only: its work per batch is a few socket and ring operations, as cheap
# compiled by C1 as by C2, and without C2 compiling beside the feeder's loader in its first seconds a cold share() has
# its first batch sooner (docs/benchmarks.md, "Start-up"). A producer that also serves over Arrow Flight keeps C2 for
# gRPC's code; options the user puts in TENSORSOCKET_JAVA_OPTS come after this one, and the JVM takes the last.
FEEDER_PRODUCER_JIT = "-XX:TieredStopAtLevel=1"


def producer_environment(args: List[str], environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment the producer for this feeder starts in: ``environ`` with ``FEEDER_PRODUCER_JIT`` before the
    user's ``TENSORSOCKET_JAVA_OPTS``, unless it serves over Flight (``args`` has ``--flight``)."""
    env = dict(environ)
    if "--flight" not in args:
        env["TENSORSOCKET_JAVA_OPTS"] = (FEEDER_PRODUCER_JIT + " " + env.get("TENSORSOCKET_JAVA_OPTS", "")).strip()
    return env


def start_producer(name: str, args: List[str]) -> Tuple[Optional[subprocess.Popen], str]:
    """Starts producer ``name`` for this feeder with ``args`` unless one runs (holds its directory's lock) or no
    launcher is found: the process, or None and why none was started (for the feeder's messages). A directory
    that no producer holds is the leftovers of a killed one, which the producer started here reclaims."""
    d = directory_for(name)
    if is_locked(d):
        if (d / SOCKET_FILE).exists() and not (d / FEEDER_SOCKET_FILE).exists():
            raise FeederError("producer '%s' is already running and serves a source of its own, not a feeder's; "
                              "feed another name, or stop it and let this feeder start one" % name)
        # it waits for a feeder, or is starting (another feeder's): this one connects to it
        return None, "producer '%s' was already running or starting when this feeder came" % name
    try:
        env = producer_environment(args, os.environ)
        found = launcher_command(warn=lambda m: print(m, file=sys.stderr), environ=env)
    except Exception as e:  # noqa: BLE001 (a damaged bundle: its message says what to reinstall)
        raise FeederError("cannot start a producer for '%s': %s" % (name, e)) from e
    if found is None:
        return None, ("found no tensorsocket launcher to start one (install the tensorsocket wheel, put "
                      "bin/tensorsocket on PATH, or set TENSORSOCKET_LAUNCHER); or start one: tensorsocket serve "
                      "--name %s --external" % name)
    argv, launcher_env = found
    cmd = argv + ["serve", "--name", name, "--external", "--feeder-pid", str(os.getpid())] + args
    # A session of its own: Ctrl-C in the terminal reaches this feeder, which stops the producer cleanly.
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, start_new_session=True,
                            env=launcher_env if launcher_env is not None else env), ""


def stop_unserved(p: Optional[subprocess.Popen]) -> None:
    """Stops producer process ``p`` (if it still runs) that never got a declaration: it stops by itself when it
    heard why (at once; a loaded machine may take seconds), else it is terminated, then killed."""
    if p is None or p.poll() is not None:
        return
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def stop_now(p: Optional[subprocess.Popen]) -> None:
    """Stops producer process ``p`` (if it still runs) that will get no declaration: terminated, then killed."""
    if p is None or p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
