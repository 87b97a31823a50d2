"""The limits of one network transfer: an overall deadline, a stall timeout and a byte cap.

A socket timeout bounds one wait, not a transfer: a peer that sends one byte per second never
trips a 30-second timeout and can hold a read open for days. A :class:`Budget` is created once
per transfer (one fetch, however many requests it makes) and consulted before every socket wait:
:meth:`Budget.timeout` gives the wait's timeout clipped to what is left of the deadline, so the
transfer ends by its deadline whatever the peer does, and :meth:`Budget.received` counts bytes
against the cap. The errors are one line each and name the peer.
"""

from __future__ import annotations

import time


class NetError(Exception):
    """A transfer was cut short; the message is one line that names the peer and the limit."""


class DeadlineExceeded(NetError):
    """The whole transfer took longer than its deadline (a slow or dripping peer)."""


class Stalled(NetError):
    """The peer sent nothing for the stall timeout."""


class TooLarge(NetError):
    """The peer sent more bytes than the cap."""


class Budget:
    """Deadline, stall timeout and byte cap shared by every socket wait of one transfer."""

    def __init__(
        self,
        deadline: float,
        *,
        stall: float,
        max_bytes: int | None = None,
        peer: str = "the server",
    ) -> None:
        # A zero or negative deadline is one that has already passed (never a crash); a socket
        # timeout of 0 would mean non-blocking, so the stall timeout has a floor.
        self.deadline = deadline
        self.stall = max(stall, 0.001)
        self.max_bytes = max_bytes
        self.peer = peer
        self.received_bytes = 0
        """Bytes received so far on every connection of the transfer (headers included)."""
        self._end = time.monotonic() + deadline

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once it has passed)."""
        return self._end - time.monotonic()

    def expired(self, peer: str | None = None) -> DeadlineExceeded:
        """The error for a passed deadline (``peer`` names the server; default :attr:`peer`)."""
        return DeadlineExceeded(
            f"{peer or self.peer} is too slow: the transfer passed its {self.deadline:g}s deadline"
        )

    def check(self, peer: str | None = None) -> None:
        """Raise :class:`DeadlineExceeded` when the deadline has passed."""
        if self.remaining() <= 0:
            raise self.expired(peer)

    def timeout(self, peer: str | None = None) -> float:
        """The timeout for the next socket wait: the stall timeout clipped to the deadline."""
        left = self.remaining()
        if left <= 0:
            raise self.expired(peer)
        return min(self.stall, left)

    def timed_out(self, peer: str | None = None) -> NetError:
        """The error for a socket wait that timed out: the deadline's, or a stall."""
        if self.remaining() <= 0.001:
            return self.expired(peer)
        return Stalled(f"{peer or self.peer} stalled: did not answer within {self.stall:g}s")

    def received(self, count: int, peer: str | None = None) -> None:
        """Count ``count`` bytes received; raise :class:`TooLarge` past the cap."""
        self.received_bytes += count
        if self.max_bytes is not None and self.received_bytes > self.max_bytes:
            raise TooLarge(
                f"{peer or self.peer} sent more than {self.max_bytes} bytes; refusing the rest"
            )
