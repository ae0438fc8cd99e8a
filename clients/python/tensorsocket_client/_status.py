"""A local producer's status, asked over its control socket as ``tensorsocket status`` asks it: a STATUS_REQUEST as
the first frame of a new connection, answered with one STATUS frame (docs/PROTOCOL.md)."""

import socket
from typing import Optional

from . import wire
from ._frames import FrameReader
from .directory import SOCKET_FILE, directory_for


def query(name: str, timeout: float = 5.0) -> Optional[wire.Status]:
    """Producer ``name``'s status, or None where no producer of that name answers within ``timeout`` seconds."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(directory_for(name) / SOCKET_FILE))
        sock.sendall(wire.encode(wire.StatusRequest()))
        answer = FrameReader(sock).read()
    except (OSError, EOFError):
        return None
    finally:
        sock.close()
    return answer if isinstance(answer, wire.Status) else None
