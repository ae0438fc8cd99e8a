"""A consumer's control connection to its local producer (docs/PROTOCOL.md, sections 2, 3 and 5)."""

import queue
import socket
import threading
import time

from . import wire
from .errors import (ConsumerEvicted, JobFailed, ProducerFailed, ProducerGone, ProducerNotResponding, ProtocolError,
                     ProtocolVersionError, RequestRejected, TensorSocketError)

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
        self.producer = producer
        self.inbox = queue.Queue()
        self.failure = None
        self.stream_ended = False
        self.closing = False
        self.producer_pid = -1
        self.last_heard = time.monotonic()
        self._send_lock = threading.Lock()
        self.thread = threading.Thread(target=self._receive, name="tensorsocket-consumer-rx", daemon=True)
        self.thread.start()

    def _read_exact(self, n, eof_ok):
        chunks = []
        got = 0
        while got < n:
            b = self.sock.recv(n - got)
            if not b:
                if eof_ok and got == 0:
                    return None
                raise EOFError("connection closed in the middle of a frame")
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)

    def _read(self):
        head = self._read_exact(wire.HEADER_BYTES, True)
        if head is None:
            return None
        version, mtype, length = wire.decode_header(head)
        payload = self._read_exact(length, False) if length else b""
        if version != wire.VERSION:
            return wire.check_version(version, mtype, payload)
        return wire.decode_payload(mtype, payload)

    def _receive(self):
        try:
            while True:
                m = self._read()
                if m is None:
                    if not self.stream_ended:
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
            if not self.stream_ended:
                self._fail(self.lost_connection(e))

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
        try:
            m = self.inbox.get(timeout=wait) if wait > 0 else self.inbox.get_nowait()
        except queue.Empty:
            return None
        if m is _WAKE:
            self.check()
            return None
        return m

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
