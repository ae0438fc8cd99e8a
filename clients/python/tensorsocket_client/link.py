"""A consumer's control connection to its local producer (docs/PROTOCOL.md, sections 2, 3 and 5)."""

import queue
import socket
import threading
import time

from . import wire
from ._frames import FrameReader
from .errors import (
    ConsumerEvicted,
    JobFailed,
    ProducerFailed,
    ProducerGone,
    ProducerNotResponding,
    ProtocolError,
    ProtocolVersionError,
    RequestRejected,
    TensorSocketError,
)
from .rings import RingTaken

_WAKE = object()
# How long a consumer whose send failed waits for the producer's last word (an ERROR saying why) to be read.
_ERROR_READ_S = 1.0


class ProducerLink:
    """The control connection. A receiver thread reads every frame as it arrives, so the producer's
    death (EOF) or an ERROR it sends is known at once, even while the consumer is busy training. It
    answers each HEARTBEAT with one and notes when anything last arrived (``last_heard``): a waiting
    consumer that heard nothing for its liveness timeout reports the producer as not responding."""

    def __init__(self, sock, producer):
        self.sock = sock
        self._frames = FrameReader(sock)
        self.producer = producer
        self.inbox = queue.Queue()
        self.failure = None
        self.stream_ended = False
        self.closing = False
        self.producer_pid = -1
        self.last_heard = time.monotonic()
        self._send_lock = threading.Lock()
        self.ring = None  # the consumer's descriptor ring (rings.RingReader) once the producer gave it one
        self.spin = 0.0
        self.thread = threading.Thread(target=self._receive, name="tensorsocket-consumer-rx", daemon=True)
        self.thread.start()

    def _read(self):
        return self._frames.read(eof_ok=True)

    def _receive(self):
        try:
            while True:
                m = self._read()
                if m is None:
                    if not self.stream_ended and not self._end_pending():
                        self._fail(self.lost_connection(None))
                    return
                self.last_heard = time.monotonic()
                if isinstance(m, wire.Heartbeat):
                    self._answer(m)
                    continue
                if isinstance(m, wire.Error):
                    self._fail(self.to_exception(m))
                    return
                if isinstance(m, wire.EndOfStream):
                    self.stream_ended = True
                self.inbox.put(m)
        except TensorSocketError as e:
            self._fail(e)
        except (OSError, EOFError) as e:
            if not self.stream_ended and not self._end_pending():
                self._fail(self.lost_connection(e))
        finally:
            ring = self.ring
            if ring is not None:
                ring.knock()  # a consumer asleep on its ring hears of the socket's news (an ERROR, its end) at once

    def _end_pending(self):
        """Whether the ring holds the stream's END, not yet taken: the producer closing its socket is no failure."""
        ring = self.ring
        if ring is None:
            return False
        try:
            return any(isinstance(_decode_entry(e), wire.EndOfStream) for e in ring.unread())
        except (ProtocolError, ValueError, AttributeError):
            return False

    def _answer(self, heartbeat):
        try:
            with self._send_lock:
                self.sock.sendall(wire.encode(heartbeat))
        except OSError:
            pass  # a broken connection shows up as EOF on the next read

    def not_responding(self, silence, awaited):
        pid = "(pid %d) " % self.producer_pid if self.producer_pid > 0 else ""
        return ProducerNotResponding(
            "producer '%s' %sis not responding: nothing arrived from it, not even its once-a-second heartbeat, for %d "
            "ms while this consumer waited for %s. Its process is alive but stopped (SIGSTOP, Ctrl-Z, a debugger) or "
            "deadlocked; resume it (kill -CONT %s) or restart it. A slow loader does not cause this; raise the "
            "consumer's liveness timeout (liveness=) if the producer's machine is badly overloaded"
            % (self.producer, pid, silence * 1000, awaited, self.producer_pid if self.producer_pid > 0 else "<pid>"))

    def check_alive(self, liveness, awaited):
        """Raises ProducerNotResponding if nothing arrived for ``liveness`` seconds (only while waiting)."""
        silence = time.monotonic() - self.last_heard
        if silence >= liveness:
            self.check()
            if self.failure is None:
                self.failure = self.not_responding(silence, awaited)
            raise self.failure

    def lost_connection(self, cause):
        return ProducerGone("lost the connection to producer '%s'%s: it exited or was killed%s; restart it and "
                            "connect again" % (self.producer,
                                               " (pid %d)" % self.producer_pid if self.producer_pid > 0 else "",
                                               " (%s)" % cause if cause else ""))

    def _fail(self, e):
        if self.failure is None and not self.closing:
            self.failure = e
        self.inbox.put(_WAKE)

    def to_exception(self, e):
        msg = e.message if ("producer '" in e.message) else "producer '%s': %s" % (self.producer, e.message)
        kind = {wire.VERSION_MISMATCH: ProtocolVersionError, wire.BAD_FRAME: ProtocolError,
                wire.BAD_REQUEST: RequestRejected, wire.EVICTED: ConsumerEvicted,
                wire.LOADER_FAILED: ProducerFailed, wire.PRODUCER_CLOSED: ProducerGone,
                wire.STOPPED: ProducerGone, wire.JOB_FAILED: JobFailed}.get(e.code, TensorSocketError)
        return kind(msg)

    def check(self):
        if self.failure is not None:
            raise self.failure

    def poll(self, wait):
        """The next message, waiting at most ``wait`` seconds; None if none came."""
        self.check()
        if self.ring is not None:
            return self._poll_ring(wait)
        try:
            m = self.inbox.get(timeout=wait) if wait > 0 else self.inbox.get_nowait()
        except queue.Empty:
            return None
        if m is _WAKE:
            self.check()
            return None
        return m

    def _poll_ring(self, wait):
        """As poll, for a consumer handed its stream through its ring: the ring first, then what the socket
        queued; then it spins ``spin`` seconds, then sleeps on the ring's doorbell until ``wait`` is up."""
        deadline = time.monotonic() + wait
        spun = self.spin <= 0
        while True:
            m = self._from_ring()
            if m is not None:
                return m
            try:
                m = self.inbox.get_nowait()
            except queue.Empty:
                m = None
            if m is _WAKE:
                self.check()
            elif m is not None:
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not spun:
                spun = True
                until = time.monotonic() + min(left, self.spin)
                while not self.ring.ready() and self.failure is None and time.monotonic() < until:
                    pass
                continue
            bell = self.ring.doorbell()
            if self.ring.ready() or self.failure is not None:
                continue
            self.ring.park(bell, left)
            self.check()

    def _from_ring(self):
        try:
            e = self.ring.poll()
        except RingTaken as t:
            # The producer's ERROR (an eviction, most likely) says why, if it came: let the receiver read it.
            if threading.current_thread() is not self.thread:
                self.thread.join(_ERROR_READ_S)
            self.check()
            self.failure = ProducerGone("producer '%s' detached this consumer: %s" % (self.producer, t))
            raise self.failure from None
        if e is None:
            return None
        try:
            m = _decode_entry(e)
        except ProtocolError as p:
            self.failure = p
            raise
        self.last_heard = time.monotonic()
        if isinstance(m, wire.EndOfStream):
            self.stream_ended = True
        return m

    def await_error(self):
        """Lets the receiving thread read what the producer said last (an ERROR, say), briefly, and raises it."""
        if threading.current_thread() is not self.thread:
            self.thread.join(_ERROR_READ_S)
        self.check()

    def send(self, m):
        data = wire.encode(m)
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError as e:
            if self.stream_ended:
                return  # the producer may already be gone after a finished stream
            # A producer that lets this consumer go (an eviction, a shutdown) sends an ERROR saying why and then
            # closes: a send can fail before the receiving thread has read that ERROR. Let it read to the end
            # (briefly) so the error says what happened, not only that the connection broke.
            if threading.current_thread() is not self.thread:
                self.thread.join(_ERROR_READ_S)
            self.check()
            self._fail(self.lost_connection(e))
            self.check()

    def close(self):
        self.closing = True
        try:
            with self._send_lock:
                self.sock.sendall(wire.encode(wire.Bye()))
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(1.0)
        ring, self.ring = self.ring, None
        if ring is not None:
            ring.close()


def _decode_entry(entry):
    """The stream event a ring entry holds: a frame as on the socket, zero-padded; nothing else may come this way."""
    version, mtype, length = wire.decode_header(entry[:wire.HEADER_BYTES])
    if version != wire.VERSION or wire.HEADER_BYTES + length > len(entry):
        raise ProtocolError("descriptor ring entry of version %d with %d payload bytes is not a frame this consumer "
                            "reads" % (version, length))
    m = wire.decode_payload(mtype, entry[wire.HEADER_BYTES:wire.HEADER_BYTES + length])
    if not isinstance(m, (wire.BatchReady, wire.EpochEnd, wire.EndOfStream, wire.Move)):
        raise ProtocolError("descriptor ring entry holds %s, which only the socket carries" % type(m).__name__)
    return m
