"""Joins a local producer: finds it (waiting, within the connect timeout, for one that is starting or waits for
its feeder), says HELLO, and checks the WELCOME against what this consumer maps (an arena inside the producer's
directory, of the announced geometry and session). The result is a validated Session; after an error nothing
stays open. The Java Handshake's twin."""

import collections
import os
import socket
import sys
import time

from . import arena as _arena
from . import directory as _directory
from . import rings as _rings
from . import wire
from ._memory import FileMapping
from ._waiting import Waiting
from .errors import PermissionDenied, ProducerFailed, ProducerGone, ProtocolError, TensorSocketTimeout
from .link import ProducerLink

_SLICE = 0.05  # seconds between looks while waiting
AWAITS_FEEDER = "it waits for its feeder to declare the batches"


class Session(collections.namedtuple("Session", "link welcome layout arena_fd arena_mm")):
    """A joined producer: the link to it, its WELCOME, the arena's layout, and the arena opened and mapped."""

    __slots__ = ()


def join(name, d, batch_size, drop_last, connect_timeout, liveness, wait_for_epoch_start, job_rank=None, ring=False,
         resume=None):
    """Joins producer ``name`` in directory ``d``; as a rank of a job with ``job_rank`` (job, rank, world size); asking
    for a descriptor ring with ``ring`` (given one, the link reads its stream from it; else from the socket);
    ``resume`` (a wire.Resume): to be served the rest of an epoch read up to a checkpoint, then the stream's end."""
    waiting = Waiting("producer '%s'" % name, connect_timeout)
    awaited_feeder = False
    while True:
        sock, state, not_yet = _attempt(name, d)
        if sock is not None:
            break
        if state == AWAITS_FEEDER:
            awaited_feeder = True
        elif awaited_feeder and not os.path.isdir(d):
            raise ProducerGone("producer '%s' went away before it served anything: it was waiting for its feeder, "
                               "which failed or stopped before declaring its batches (its output says why)" % name)
        if waiting.left() <= 0:
            raise not_yet(waiting.within())
        waiting.note(state, _directory.live_producers)
        time.sleep(0.02)
    link = ProducerLink(sock, name)
    try:
        client = ("python3 " + " ".join(sys.argv))[:1000]
        policy = wire.NEXT_EPOCH_START if wait_for_epoch_start else wire.JOIN_NOW
        job, rank, world = job_rank if job_rank is not None else ("", 0, 1)
        # It may be moved to a lane of its own when it falls behind (MOVE); a rank with the rest of its job.
        if resume is not None:
            link.send(resume)
        link.send(wire.Hello(batch_size, drop_last, os.getpid(), client, policy, ring, job, rank, world, True))
        # A rank of a job is answered once all the job's ranks have joined (the producer sends heartbeats meanwhile).
        w = take(link, connect_timeout, "the answer to HELLO" if job_rank is None or resume is not None else
                 "the answer to HELLO (the producer admits rank %d of %d of job '%s' once all its ranks have joined)"
                 % (rank, world, job), liveness)
        if not isinstance(w, wire.Welcome):
            raise ProtocolError("producer '%s' answered HELLO with %s" % (name, type(w).__name__))
        link.producer_pid = w.producer_pid
        if w.ring != -1 and not ring:
            raise ProtocolError("producer '%s' gave descriptor ring %d to this consumer, which asked to be "
                                "served over its socket" % (name, w.ring))
        if w.ring != -1:
            try:
                link.ring = _rings.RingReader(os.path.join(d, _directory.RINGS_FILE), w.session_id, w.ring,
                                              w.consumer_id)
            except FileNotFoundError:
                raise ProducerGone("producer '%s' went away while this consumer connected" % name) from None
        layout = _arena.Layout(w.tensors, w.producer_batch_size, w.slot_count)
        arena_path = os.path.join(d, _directory.ARENA_FILE)
        if os.path.normpath(os.path.abspath(w.arena_path)) != os.path.normpath(arena_path):
            raise ProtocolError("producer '%s' announced arena %s outside its directory %s"
                                % (name, w.arena_path, d))
        if layout.slot_bytes != w.slot_bytes:
            raise ProtocolError("producer '%s' announced %d-byte slots where its layout needs %d"
                                % (name, w.slot_bytes, layout.slot_bytes))
        try:
            fd = os.open(arena_path, os.O_RDONLY)
        except FileNotFoundError:
            raise ProducerGone("producer '%s' went away while this consumer connected" % name) from None
        try:
            size = os.fstat(fd).st_size
            if size < layout.file_bytes:
                raise ProtocolError("arena %s is %d bytes but the producer announced %d; is another producer "
                                    "using this directory?" % (arena_path, size, layout.file_bytes))
            _arena.header_problem(layout, os.pread(fd, _arena.HEADER_BYTES, 0), w.session_id, arena_path)
            arena_mm = FileMapping(fd, layout.file_bytes, 0)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        link.close()
        raise
    return Session(link, w, layout, fd, arena_mm)


def _attempt(name, d):
    """One look for the producer: (socket, None, None) once connected, else (None, what the directory shows
    now, a function of the waited time giving the exception to raise if that is still so at the deadline).
    Access problems raise at once: waiting does not mend them."""

    def feed_hint():
        return ("start one: a feeder (tensorsocket_client.TensorProducer(%r, loader), or python3 -m "
                "tensorsocket_client feed --name %s ...) or %s serve --name %s ..." % (name, name, _directory.launcher(), name))
    if not os.path.isdir(d):
        return None, "no directory %s yet" % d, lambda within: _directory.not_found(
            "no producer named '%s' appeared%s (no directory %s); running: %s. To %s"
            % (name, within, d, _directory.live_producers(), feed_hint()))
    try:
        with open(os.path.join(d, _directory.FAILED_FILE), encoding="utf-8") as f:
            raise ProducerFailed("producer '%s' failed before it served: %s" % (name, f.read()))
    except OSError:
        pass  # none: it has not failed
    _directory.check_accessible_to_current_user(d)
    sock_path = os.path.join(d, _directory.SOCKET_FILE)
    if not os.path.exists(sock_path):
        if os.path.exists(os.path.join(d, _directory.FEEDER_SOCKET_FILE)):
            # An external producer opens its control socket once its feeder declared the batches.
            return None, AWAITS_FEEDER, lambda within: TensorSocketTimeout(
                "producer '%s' was still waiting for its feeder%s: it serves batches from an external loader that "
                "has not connected yet; start one (tensorsocket_client.TensorProducer(%r, loader))" % (name, within, name))
        return None, "its directory exists but its control socket does not yet (starting)", \
            lambda within: _directory.not_found("no producer is running in %s: no control socket appeared%s; running: %s."
                                                " To %s" % (d, within, _directory.live_producers(), feed_hint()))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(sock_path)
        return sock, None, None
    except PermissionError:
        sock.close()
        raise PermissionDenied("not allowed to connect to producer '%s' (%s); it belongs to another user or its "
                               "permissions exclude you" % (name, sock_path)) from None
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
    # A socket nobody answers: a producer that died (a new one may reclaim the directory) or one starting.
    state = "it is starting" if _directory.is_locked(d) else "%s is left over from a producer that died" % sock_path
    return None, state, lambda within: _directory.not_found(
        "producer '%s' is not running (%s is left over from a producer that died, and none replaced it%s); start "
        "it again, or remove the leftovers with: %s clean" % (name, sock_path, within, _directory.launcher()))


def take(link, timeout, awaited, liveness):
    """The next message from ``link`` within ``timeout``, judging the producer's liveness meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        m = link.poll(min(max(left, 0), _SLICE))
        if m is not None:
            return m
        link.check_alive(liveness, awaited)
        if left <= 0:
            link.check()
            raise TensorSocketTimeout("waited %d ms for %s from producer '%s'; the producer is alive but sent "
                                      "nothing (a slow loader, or a stalled peer holding everyone up); raise the "
                                      "consumer's timeout if that is expected"
                                      % (timeout * 1000, awaited, link.producer))

