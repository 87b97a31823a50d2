"""Split a byte stream into lines in linear time, with a cap on the length of one line.

The naive ``pending += chunk; *lines, pending = pending.split(b"\\n")`` copies the whole
unfinished line on every chunk: a 50 MB line without a newline sent in 64 KiB chunks costs about
20 GB of copying. :class:`LineSplitter` scans only the new bytes for newlines, keeps just the
unfinished tail in a ``bytearray`` (amortised appends), and refuses a line longer than its cap as
soon as the tail passes it, so every byte is copied a bounded number of times.
"""

from __future__ import annotations


class LineTooLong(ValueError):
    """One line is longer than the cap."""


class LineSplitter:
    """Feed chunks, get complete lines (without the newline); :meth:`finish` gives the rest."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._tail = bytearray()
        self.copied_bytes = 0
        """Bytes copied into the tail buffer so far (at most the bytes fed: linear)."""

    def _too_long(self) -> LineTooLong:
        return LineTooLong(f"a line is longer than {self.max_line_bytes} bytes")

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the lines it completed, in order."""
        first = data.find(b"\n")
        if first < 0:
            if len(self._tail) + len(data) > self.max_line_bytes:
                raise self._too_long()
            self._tail += data
            self.copied_bytes += len(data)
            return []
        if len(self._tail) + first > self.max_line_bytes:
            raise self._too_long()
        if self._tail:
            self._tail += data[:first]
            self.copied_bytes += first
            lines = [bytes(self._tail)]
            self._tail.clear()
        else:
            lines = [data[:first]]
        start = first + 1
        while (end := data.find(b"\n", start)) >= 0:
            if end - start > self.max_line_bytes:
                raise self._too_long()
            lines.append(data[start:end])
            start = end + 1
        rest = len(data) - start
        if rest > self.max_line_bytes:
            raise self._too_long()
        if rest:
            self._tail += data[start:]
            self.copied_bytes += rest
        return lines

    def finish(self) -> bytes:
        """The bytes after the last newline (an unfinished line; empty if the stream ended
        with a newline)."""
        rest = bytes(self._tail)
        self._tail.clear()
        return rest
