"""Reading the control protocol's frames off a stream socket (docs/PROTOCOL.md, section 2), for a consumer's link
and a feeder's alike: one ``recv`` often brings several frames, so what arrived past a frame waits for the next read."""

from . import wire


class FrameReader:
    """Reads whole frames from ``sock``; one reader per socket, from one thread."""

    def __init__(self, sock):
        self._sock = sock
        self._received = bytearray()

    def _exact(self, n, eof_ok):
        buf = self._received
        while len(buf) < n:
            chunk = self._sock.recv(max(65536, n - len(buf)))
            if not chunk:
                if eof_ok and not buf:
                    return None
                raise EOFError("connection closed in the middle of a frame" if buf else "connection closed")
            buf += chunk
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def read(self, eof_ok=False):
        """The next frame, decoded; None at a clean end of the stream where ``eof_ok``. An end in the middle of a
        frame, or anywhere when not ``eof_ok``, raises EOFError; a frame of another protocol version raises what
        ``wire.check_version`` says."""
        head = self._exact(wire.HEADER_BYTES, eof_ok)
        if head is None:
            return None
        version, mtype, length = wire.decode_header(head)
        payload = self._exact(length, False) if length else b""
        if version != wire.VERSION:
            return wire.check_version(version, mtype, payload)
        return wire.decode_payload(mtype, payload)
