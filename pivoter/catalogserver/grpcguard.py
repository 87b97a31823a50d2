"""Keep ``catalog serve``'s gRPC server available under hostile clients.

grpcio's synchronous server runs every call on a worker thread, and a worker waits there for
whatever the client owes: the request message (a client that sends HEADERS and never the
message held it for ever), and every answer message (a client that announces a zero
flow-control window held it for ever: eight such streams held all eight workers, so every other
call missed its deadline). A client that resets its streams as fast as it opens them (HTTP/2
rapid reset, CVE-2023-44487) filled grpc core's queue of pending calls, so most normal calls were
cancelled. The guard, built once per server by :func:`pivoter.catalogserver.grpcserver.
build_server`:

- **Transport** (:func:`server_options`, grpc core's channel arguments): at most
  ``max_concurrent_streams`` streams per connection (grpc core counts a stream the client reset
  until the server is done with it, so a rapid reset runs into the same cap: 20 of 20 normal
  calls answered during an 8-connection flood, 0 without it); the HTTP/2 handshake within
  ``handshake_timeout``; a connection closed after ``idle_timeout`` without calls and after
  ``max_connection_age`` (plus ``max_connection_age_grace`` for its calls); keepalive pings to
  find dead peers; ping floods answered with GOAWAY (``max_ping_strikes``); at most
  ``max_connections`` connections (a quarter of the open-files limit at most), so that a flood
  cannot take the descriptors the HTTP server needs.
- **Calls** (:class:`CallGuard`, a server interceptor that wraps each method's handler once):
  every method is served as a request-streaming one, so the wait for the request message
  happens in the guard's code instead of grpcio's. Every wait on the client is armed on the
  process's :class:`Watchdog` thread, which cancels the call (``context.cancel()`` wakes the
  worker) when it runs out: a call's first request message within ``read_timeout`` (the next
  ones of a request stream within ``idle_timeout``); each answer message,
  and then the final status, taken within ``write_timeout`` plus its size at ``min_rate``.
- **Threads**: at most ``threads`` workers (:class:`ThreadPool`: one that cannot be started, for
  want of address space for its stack, is a log line instead of the end of grpcio's serving
  thread); waits that hold a worker may take all but a reserve of an eighth (at least 2): past
  that, the one that has waited longest is cancelled, so stalled clients from any number of
  addresses never take every thread. One address (an IPv6 /64) may have at most
  ``max_calls_per_peer`` calls open (until each has ended, answer sent: a unary answer stuck in
  a closed window counts); one more is refused at once with RESOURCE_EXHAUSTED.

What grpcio answers stays the same (a unary call half-closed without its message is
UNIMPLEMENTED, an undecodable message INTERNAL), and a call grpcio has ended itself is left to
finish before the handler's end (which used to leave it unfinished: ``stop()`` then waited for
ever). Cancellations are logged in one line at debug level.
"""

from __future__ import annotations

import logging
import resource
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import grpc

from pivoter.httpserving import peer_key

__all__ = ["CallGuard", "GrpcLimits", "ThreadPool", "Watchdog", "peer_of", "server_options"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GrpcLimits:
    """What one gRPC client may hold, and for how long."""

    threads: int = 32
    """Worker threads; calls wait on clients in them, within the timeouts below (each thread
    reserves a stack: 8 MiB of address space by default)."""
    max_calls_per_peer: int = 16
    """Calls from one address (an IPv6 /64) open at once; more are refused (RESOURCE_EXHAUSTED)."""
    max_concurrent_streams: int = 8
    """Streams per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); clients queue the rest."""
    read_timeout: float = 10.0
    """Seconds a call may wait for its (first) request message."""
    write_timeout: float = 30.0
    """Seconds an answer message (plus its size at ``min_rate``) or the final status may wait for
    the client to take it."""
    min_rate: float = 16 * 1024
    """Bytes per second a client must take an answer message at, after ``write_timeout``."""
    handshake_timeout: float = 10.0
    """Seconds for a new connection's HTTP/2 preface and settings."""
    idle_timeout: float = 120.0
    """Seconds a connection without calls stays open."""
    max_connection_age: float = 3600.0
    """Seconds after which a connection is asked to go (GOAWAY; grpc core adds a jitter)."""
    max_connection_age_grace: float = 300.0
    """Seconds the calls of such a connection get to finish before it is closed."""
    keepalive_time: float = 60.0
    """Seconds between the server's pings on a connection."""
    keepalive_timeout: float = 20.0
    """Seconds for a ping's answer before the connection is closed as dead."""
    max_connections: int = 1024
    """Connections open at once (a quarter of the open-files limit at most)."""
    max_request_bytes: int = 1024 * 1024
    """Size of one request message (RESOURCE_EXHAUSTED past it): requests are names and GVKs,
    and every call open could make the server hold one."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"GrpcLimits.{name} must be above zero, not {value!r}")


class ThreadPool(futures.ThreadPoolExecutor):
    """grpcio's worker pool, where a thread that cannot be started (no address space for its
    stack) is one log line: the call waits for a running thread instead of grpcio's serving
    thread dying of the RuntimeError (after which the server answers nothing)."""

    _warned = -60.0

    def _adjust_thread_count(self) -> None:
        try:
            super()._adjust_thread_count()
        except RuntimeError as exc:
            now = time.monotonic()
            if now - self._warned > 10:
                self._warned = now
                log.warning("gRPC: cannot start a worker thread: %s", exc)


def _open_files_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def server_options(limits: GrpcLimits) -> list[tuple[str, int]]:
    """grpc core's channel arguments for ``limits`` (see the module docstring)."""
    return [
        ("grpc.max_concurrent_streams", limits.max_concurrent_streams),
        ("grpc.server_handshake_timeout_ms", _ms(limits.handshake_timeout)),
        ("grpc.max_connection_idle_ms", _ms(limits.idle_timeout)),
        ("grpc.max_connection_age_ms", _ms(limits.max_connection_age)),
        ("grpc.max_connection_age_grace_ms", _ms(limits.max_connection_age_grace)),
        ("grpc.keepalive_time_ms", _ms(limits.keepalive_time)),
        ("grpc.keepalive_timeout_ms", _ms(limits.keepalive_timeout)),
        ("grpc.http2.max_ping_strikes", 2),
        (
            "grpc.max_allowed_incoming_connections",
            max(8, min(limits.max_connections, _open_files_limit() // 4)),
        ),
    ]


def peer_of(context: grpc.ServicerContext) -> str:
    """The address a call is counted under (``ipv4:1.2.3.4:5``, ``ipv6:%5B::1%5D:5``)."""
    peer = context.peer() or ""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        host = unquote(rest).rsplit(":", 1)[0].strip("[]")
        return peer_key(host)
    return peer


# -- the watchdog ---------------------------------------------------------------------------------


class _Wait:
    """One armed wait: the call to cancel and why, unless disarmed first."""

    __slots__ = ("context", "deadline", "why")

    def __init__(self, context: Any, deadline: float, why: str) -> None:
        self.context = context
        self.deadline = deadline
        self.why = why


class Watchdog:
    """One daemon thread that cancels calls whose armed wait has run out.

    A handful of waits are armed at any time (one per call waiting on its client), so the thread
    scans them all and sleeps until the earliest deadline (not at all while none is armed).
    """

    def __init__(self, name: str = "grpc-watchdog") -> None:
        self._name = name
        self._waits: set[_Wait] = set()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._sleeping_until = float("inf")
        """When the thread will next look (it is woken only for an earlier deadline)."""

    def arm(self, context: Any, seconds: float, why: str) -> _Wait:
        """Cancel the call of ``context`` in ``seconds`` unless :meth:`disarm` comes first."""
        wait = _Wait(context, time.monotonic() + seconds, why)
        with self._wake:
            self._waits.add(wait)
            if self._thread is None:
                thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                try:
                    thread.start()
                except RuntimeError as exc:  # no address space for its stack: next time
                    log.warning("gRPC: cannot start the watchdog thread yet: %s", exc)
                else:
                    self._thread = thread
            if wait.deadline < self._sleeping_until:
                self._sleeping_until = wait.deadline
                self._wake.notify()
        return wait

    def disarm(self, wait: _Wait) -> None:
        """The client did what it owed in time."""
        with self._wake:
            self._waits.discard(wait)

    def stop(self) -> None:
        """End the thread (armed waits are dropped)."""
        with self._wake:
            self._stopped = True
            self._waits.clear()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                if self._stopped:
                    return
                now = time.monotonic()
                due = [w for w in self._waits if w.deadline <= now]
                self._waits.difference_update(due)
                if not due:
                    earliest = min((w.deadline for w in self._waits), default=float("inf"))
                    self._sleeping_until = earliest
                    self._wake.wait(None if earliest == float("inf") else earliest - now)
                    continue
            for wait in due:
                log.debug("gRPC: cancelling a call from %s: %s", wait.context.peer(), wait.why)
                wait.context.cancel()


WATCHDOG = Watchdog()
"""The process's one watchdog thread (started when first armed), shared by every server."""


# -- the call guard -------------------------------------------------------------------------------


class _Ended(Exception):
    """grpcio has already ended the call (a request it could not decode): leave quietly."""


_ENDED = object()
"""What a guarded unary method returns after :class:`_Ended`: serialized as nothing (grpcio's
own status batch for it fails quietly on the finished call, as in grpcio's own unary path)."""


def _size(message: Any) -> int:
    if isinstance(message, bytes | bytearray | memoryview):
        return len(message)
    size = getattr(message, "ByteSize", None)
    return int(size()) if callable(size) else 0


if TYPE_CHECKING:
    _Interceptor = grpc.ServerInterceptor[Any, Any]
else:  # grpcio's class is not generic at run time
    _Interceptor = grpc.ServerInterceptor


class CallGuard(_Interceptor):
    """Wraps every method's handler (once per handler) as the module docstring describes."""

    def __init__(self, limits: GrpcLimits, watchdog: Watchdog | None = None) -> None:
        self.limits = limits
        self.watchdog = watchdog or WATCHDOG
        self._lock = threading.Lock()
        self._calls: dict[str, int] = {}
        self._holding: dict[_Wait, None] = {}
        """Waits that hold a worker thread, oldest first."""
        self._max_holding = max(1, limits.threads - max(2, limits.threads // 8))
        self._wrapped: dict[int, tuple[Any, Any]] = {}

    # -- wrapping ---------------------------------------------------------------------------------

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        """The guarded handler of the method called (built the first time it is called)."""
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        cached = self._wrapped.get(id(handler))
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler, str(handler_call_details.method))
        with self._lock:
            self._wrapped[id(handler)] = (handler, wrapped)
        return wrapped

    def _wrap(self, handler: Any, method: str) -> Any:
        deserialize = handler.request_deserializer
        inner_serialize = handler.response_serializer

        def serialize(message: Any) -> bytes:
            if message is _ENDED:
                return b""
            return bytes(inner_serialize(message)) if inner_serialize else bytes(message)

        if handler.request_streaming and handler.response_streaming:
            inner = handler.stream_stream

            def stream_stream(requests: Iterator[Any], context: Any) -> Iterator[Any]:
                self._admit(context)
                yield from self._answers(inner(self._requests(requests, context), context), context)

            return grpc.stream_stream_rpc_method_handler(stream_stream, deserialize, serialize)
        if handler.request_streaming:
            inner = handler.stream_unary

            def stream_unary(requests: Iterator[Any], context: Any) -> Any:
                self._admit(context)
                return self._answer(inner(self._requests(requests, context), context), context)

            return grpc.stream_unary_rpc_method_handler(stream_unary, deserialize, serialize)
        if handler.response_streaming:
            inner = handler.unary_stream

            def unary_stream(requests: Iterator[Any], context: Any) -> Iterator[Any]:
                self._admit(context)
                try:
                    request = self._one(requests, context, method)
                except _Ended:
                    return
                yield from self._answers(inner(request, context), context)

            return grpc.stream_stream_rpc_method_handler(unary_stream, deserialize, serialize)
        inner = handler.unary_unary

        def unary_unary(requests: Iterator[Any], context: Any) -> Any:
            self._admit(context)
            try:
                request = self._one(requests, context, method)
            except _Ended:
                return _ENDED
            return self._answer(inner(request, context), context)

        return grpc.stream_unary_rpc_method_handler(unary_unary, deserialize, serialize)

    # -- admission --------------------------------------------------------------------------------

    def _admit(self, context: Any) -> None:
        """Count the call against its peer's share until the call ends (answer sent: a unary
        answer goes out after the handler returns), or refuse it (RESOURCE_EXHAUSTED)."""
        peer = peer_of(context)
        cap = self.limits.max_calls_per_peer
        with self._lock:
            open_calls = self._calls.get(peer, 0)
            admitted = open_calls < cap
            if admitted:
                self._calls[peer] = open_calls + 1
        if not admitted:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many calls from {peer} at once (at most {cap}); retry later",
            )
        if not context.add_callback(lambda: self.release(peer)):
            self.release(peer)  # the call has already ended

    def release(self, peer: str) -> None:
        """A call of ``peer`` has ended."""
        with self._lock:
            left = self._calls.get(peer, 1) - 1
            if left > 0:
                self._calls[peer] = left
            else:
                self._calls.pop(peer, None)

    def open_calls(self) -> dict[str, int]:
        """Calls open per peer (for tests and debugging)."""
        with self._lock:
            return dict(self._calls)

    # -- waiting on the client --------------------------------------------------------------------

    def _one(self, requests: Iterator[Any], context: Any, method: str) -> Any:
        """The one request message of a unary-request method, within ``read_timeout``."""
        wait = self._hold(context, self.limits.read_timeout, "no request message in time")
        try:
            return next(requests)
        except StopIteration:
            if context.is_active():  # half-closed without a message: what grpcio answers
                context.abort(
                    grpc.StatusCode.UNIMPLEMENTED,
                    f'"{method}" requires exactly one request message.',
                )
            self._until_ended(context)
            raise _Ended from None
        finally:
            self._let_go(wait)

    def _requests(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:
        """A request stream whose first message must come within ``read_timeout``, and each
        next one within ``idle_timeout``.

        When grpcio has ended the call itself (a message it could not decode: the stream just
        ends), this waits until the call is over before ending the stream: the handler's end
        makes grpcio send a second status, and one sent before the call is over is never
        completed, so the call is never finished and ``server.stop()`` waited for it for ever
        (as it did before the guard, for a reflection request that was not protobuf).
        """
        seconds = self.limits.read_timeout
        while True:
            wait = self._hold(context, seconds, "no request message in time")
            # Between requests a client may think (a reflection client between lookups): the
            # next one may take as long as a connection may stay idle.
            seconds = self.limits.idle_timeout
            try:
                request = next(requests)
            except StopIteration:
                if not context.is_active():
                    self._until_ended(context)
                return
            finally:
                self._let_go(wait)
            yield request

    def _hold(self, context: Any, seconds: float, why: str) -> _Wait:
        """Arm a wait that holds a worker thread. At most ``threads`` less a reserve (an eighth,
        at least 2) may hold one: past that, the wait that has held its thread longest is
        cancelled, so that waits on clients (from however many addresses) never take every
        thread and calls that only need a thread for a moment always find one."""
        wait = self.watchdog.arm(context, seconds, why)
        oldest = None
        with self._lock:
            if len(self._holding) >= self._max_holding:
                oldest = next(iter(self._holding))
                del self._holding[oldest]
            self._holding[wait] = None
        if oldest is not None:
            self.watchdog.disarm(oldest)
            log.debug(
                "gRPC: cancelling a call from %s to free a thread: %s",
                oldest.context.peer(),
                oldest.why,
            )
            oldest.context.cancel()
        return wait

    def _let_go(self, wait: _Wait) -> None:
        with self._lock:
            self._holding.pop(wait, None)
        self.watchdog.disarm(wait)

    def _until_ended(self, context: Any) -> None:
        ended = threading.Event()
        if context.add_callback(ended.set) and not ended.wait(self.limits.write_timeout):
            context.cancel()
            ended.wait(1.0)

    def _answer(self, answer: Any, context: Any) -> Any:
        """A unary answer: its send (with the status) is watched until the call ends."""
        self._watch_until_ended(context, _size(answer))
        return answer

    def _answers(self, answers: Iterator[Any], context: Any) -> Iterator[Any]:
        """Each answer message must be taken in time; then the status."""
        limits = self.limits
        try:
            for answer in answers:
                budget = limits.write_timeout + _size(answer) / limits.min_rate
                wait = self._hold(context, budget, "the client did not take an answer")
                try:
                    yield answer
                finally:
                    self._let_go(wait)
        finally:
            close = getattr(answers, "close", None)
            if callable(close):
                close()
        self._watch_until_ended(context, 0)

    def _watch_until_ended(self, context: Any, size: int) -> None:
        budget = self.limits.write_timeout + size / self.limits.min_rate
        wait = self.watchdog.arm(context, budget, "the client did not take the answer")
        if not context.add_callback(lambda: self.watchdog.disarm(wait)):
            self.watchdog.disarm(wait)
