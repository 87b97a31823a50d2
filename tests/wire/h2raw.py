"""A hand-made HTTP/2 client for the hostile-client tests: just enough framing and HPACK to open
gRPC streams and then misbehave (never open the flow-control window, reset streams as fast as
they open, send headers and never the message), which no well-behaved library client does.

HPACK is written with literal header fields, never indexed and never Huffman-coded (RFC 7541
6.2.2), so no dynamic table is needed on our side; frames the server sends are read by a
background thread that acknowledges SETTINGS and PING (a client that ignores them would be
closed by the server's keepalive, which is not the misbehaviour under test) and otherwise
records only what the tests ask about (GOAWAY, RST_STREAM, the streams that ended).
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterable

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_INITIAL_WINDOW_SIZE = 0x3, 0x4
CANCEL = 0x8


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One frame: 24-bit length, type, flags, 31-bit stream id, payload."""
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", kind, flags, stream) + payload


def _integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """An HPACK integer with an N-bit prefix (RFC 7541 5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: str) -> bytes:
    raw = text.encode()
    return _integer(len(raw), 7) + raw


def header_block(headers: Iterable[tuple[str, str]]) -> bytes:
    """Headers as literal fields without indexing, new names (RFC 7541 6.2.2)."""
    return b"".join(b"\x00" + _string(name) + _string(value) for name, value in headers)


def grpc_headers(path: str, authority: str = "localhost") -> bytes:
    """The header block of a gRPC call to ``path`` (``/package.Service/Method``)."""
    return header_block(
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
    )


def grpc_message(payload: bytes) -> bytes:
    """A length-prefixed, uncompressed gRPC message."""
    return b"\x00" + struct.pack(">I", len(payload)) + payload


def settings(**values: int) -> bytes:
    """A SETTINGS frame; keyword names are ``initial_window_size`` and the like."""
    ids = {
        "max_concurrent_streams": SETTINGS_MAX_CONCURRENT_STREAMS,
        "initial_window_size": SETTINGS_INITIAL_WINDOW_SIZE,
    }
    payload = b"".join(struct.pack(">HI", ids[name], value) for name, value in values.items())
    return frame(SETTINGS, 0, 0, payload)


class RawH2:
    """One HTTP/2 connection to ``port`` on 127.0.0.1 (or from ``source`` address)."""

    def __init__(self, port: int, *, source: str = "127.0.0.1", **initial: int) -> None:
        self.sock = socket.create_connection(
            ("127.0.0.1", port), timeout=10, source_address=(source, 0)
        )
        self.sock.settimeout(None)
        self.next_stream = 1
        self.goaway = threading.Event()
        self.closed = threading.Event()
        self.ended: set[int] = set()
        """Streams the server ended (END_STREAM on its HEADERS or DATA, or RST_STREAM)."""
        self.settings: dict[int, int] = {}
        """The server's SETTINGS."""
        self._lock = threading.Lock()
        self.send(PREFACE + settings(**initial))
        self._reader = threading.Thread(target=self._read, name="raw-h2", daemon=True)
        self._reader.start()

    def send(self, data: bytes) -> None:
        """Write bytes (serialised between the test's thread and the reader's acks)."""
        with self._lock:
            self.sock.sendall(data)

    def open_call(self, path: str, request: bytes | None = b"", *, end: bool = True) -> int:
        """Open a stream calling ``path``; send ``request`` as its one message (None: no
        message at all) and half-close when ``end``. Returns the stream id."""
        stream = self.next_stream
        self.next_stream += 2
        data = b""
        if request is not None:
            data = frame(DATA, END_STREAM if end else 0, stream, grpc_message(request))
        flags = END_HEADERS | (END_STREAM if end and request is None else 0)
        self.send(frame(HEADERS, flags, stream, grpc_headers(path)) + data)
        return stream

    def rapid_reset(self, path: str, count: int) -> None:
        """Open ``count`` streams and reset each at once, all in one write."""
        block = grpc_headers(path)
        out = bytearray()
        for _ in range(count):
            stream = self.next_stream
            self.next_stream += 2
            out += frame(HEADERS, END_HEADERS, stream, block)
            out += frame(RST_STREAM, 0, stream, struct.pack(">I", CANCEL))
        self.send(bytes(out))

    def _read(self) -> None:
        buffer = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while len(buffer) >= 9:
                    length = int.from_bytes(buffer[:3], "big")
                    if len(buffer) < 9 + length:
                        break
                    kind, flags = buffer[3], buffer[4]
                    stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                    payload = buffer[9 : 9 + length]
                    buffer = buffer[9 + length :]
                    self._on_frame(kind, flags, stream, payload)
        except OSError:
            return
        finally:
            self.closed.set()

    def _on_frame(self, kind: int, flags: int, stream: int, payload: bytes) -> None:
        if kind == SETTINGS and not flags & ACK:
            for offset in range(0, len(payload) - 5, 6):
                key, value = struct.unpack(">HI", payload[offset : offset + 6])
                self.settings[key] = value
            self.send(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, payload))
        elif kind == GOAWAY:
            self.goaway.set()
        elif kind == RST_STREAM or (kind in (HEADERS, DATA) and flags & END_STREAM):
            self.ended.add(stream)

    def window_update(self, stream: int, increment: int) -> None:
        """Open ``stream``'s window (0: the connection's) by ``increment`` bytes."""
        self.send(frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment)))

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def __enter__(self) -> RawH2:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rapid_reset_main(argv: list[str]) -> None:
    """``python -m tests.wire.h2raw PORT CONNECTIONS SECONDS``: reset streams as fast as
    possible on each connection for that long (a separate process, as an attacker is: in the
    test's own process the flood would take the interpreter lock from the server it attacks)."""
    port, connections, seconds = int(argv[0]), int(argv[1]), float(argv[2])
    stop = threading.Event()

    def flood() -> None:
        with RawH2(port) as client:
            while not stop.is_set() and not client.closed.is_set():
                try:
                    client.rapid_reset("/api.Registry/GetPackage", 200)
                except OSError:
                    return

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(connections)]
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join(5)


if __name__ == "__main__":
    import sys

    _rapid_reset_main(sys.argv[1:])
