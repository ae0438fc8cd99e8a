"""The feeder's side of the producer's feeder socket (docs/PROTOCOL.md, feeder socket, types 14 to 21)."""

import socket
from pathlib import Path

from . import wire
from ._frames import FrameReader
from .errors import ProducerFailed, ProtocolError, TensorSocketError


class FeederError(TensorSocketError):
    """The producer refused this feeder or ended the stream because of what it sent."""


class ProducerEnded(FeederError):
    """The producer ended the stream by its own rules, a normal end: its consumers came, read and left, and none
    came back within its idle timeout (a share's linger). The message says so."""


class FeederLink:
    """A feeder's conversation with its producer over the producer's feeder socket: frames out, the producer's
    answers in, each of the type the feeder awaits; the producer's ERROR becomes a FeederError, its going away a
    ProducerFailed that says what the feeder was doing."""

    def __init__(self, path: Path, timeout: float):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()
            raise
        self._frames = FrameReader(self.sock)

    def send(self, message):
        self.send_frames(wire.encode(message))

    def send_frames(self, frames: bytes):
        """Sends encoded frames at once (several claims in one write)."""
        try:
            self.sock.sendall(frames)
        except OSError as e:
            # The producer closed the connection: it said why before it did (a second feeder, a refused declaration).
            self.sock.settimeout(1.0)
            try:
                self.read(wire.Error, "a message it did not read")
            except (FeederError, ProtocolError):
                raise
            except (OSError, TensorSocketError):
                pass
            raise ProducerFailed("the producer closed the feeder connection (%s)" % e) from None

    def read_any(self):
        """The producer's next frame, whatever it is (an ERROR too)."""
        try:
            return self._frames.read()
        except ConnectionResetError:
            # A producer that refuses a feeder says why (ERROR) before it closes; a reset means its process ended, killed
            # or crashed, with frames of this feeder still unread.
            raise ProducerFailed("the producer's process ended (killed or crashed: its end of the feeder connection was "
                                 "reset with frames of this feeder unread)") from None
        except EOFError:
            raise ProducerFailed("the producer closed the feeder connection") from None

    def read(self, expected, answering: str):
        """The producer's answer, of type ``expected``; its ERROR is raised as a FeederError."""
        m = self.read_any()
        if isinstance(m, wire.Error):
            raise (ProducerEnded if m.code == wire.PRODUCER_CLOSED else FeederError)(m.message)
        if not isinstance(m, expected):
            raise ProtocolError("the producer answered %s with %s" % (answering, type(m).__name__))
        return m

    def error(self, code: int, message: str) -> None:
        """Tells the producer why this feeder stops; quietly, since it may be gone already."""
        try:
            self.sock.sendall(wire.encode(wire.Error(code, message[:2000])))
        except OSError:
            pass

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
