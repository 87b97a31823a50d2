"""Load a catalog directory into an immutable snapshot, and reload it when the directory changes.

``pivoter catalog serve`` (:mod:`pivoter.catalogserver.serve`) builds one :class:`Reloader`; the
gRPC and HTTP servers read :attr:`Reloader.current` on every request. A reload loads the
directory with the shared loader (every file through :mod:`resolver.catalog.guard`; the catalogd
JSONL is rendered from the same read, :func:`resolver.catalog.load.load_served`), validates it,
builds the registry view, and only then swaps the snapshot (one
attribute assignment): readers see the old catalog or the new one, never a mix.

A reload that fails keeps the last good snapshot, whatever the failure: a broken edit, an
unreadable file, or any unexpected exception in a reload step. The poll thread never dies (each
attempt runs in a worker thread whose every exception is caught) and never waits for good on a
reload that does not finish: after ``reload_timeout`` seconds the attempt is reported as stuck
and the poller waits for it without blocking shutdown. Every failure is reported the same three
ways: an ERROR log line ``catalog NAME: keeping the last good catalog: <reason>``, the
``pivoter_catalog_reload_*`` metrics (``..._last_success`` 0, ``pivoter_catalog_stale`` 1,
``pivoter_catalog_reload_errors_total{kind}``), and :meth:`Reloader.stale_reason`, which the
servers advertise to clients (HTTP header, gRPC metadata; see :mod:`.stale`). The next good
reload (or the directory going back to the served content) clears all three.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from prometheus_client import CollectorRegistry, Counter, Gauge

from pivoter.catalogserver.registry import RegistryError, RegistryView
from resolver.catalog import model
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.jsonl import Body, MetaLine, select, text_chunks
from resolver.catalog.load import gc_paused, load_served
from resolver.catalog.validate import validate
from resolver.catalog.walk import list_catalog_files

log = logging.getLogger(__name__)


class SnapshotError(Exception):
    """The directory does not hold a servable catalog right now; the message says why."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One loaded, validated catalog and everything the servers derive from it."""

    catalog: model.Catalog
    view: RegistryView
    jsonl_gzip: bytes
    """The catalogd body, gzip-compressed (:mod:`resolver.catalog.jsonl`): most clients ask for
    gzip, and holding only this copy keeps a catalog's text at a quarter of its size in memory."""
    jsonl_size: int
    """Length of the uncompressed body."""
    lines: tuple[MetaLine, ...]
    last_modified: int
    """Whole seconds since the epoch when this snapshot was loaded (HTTP ``Last-Modified``)."""
    signature: str
    """Digest of the file list (names, sizes, mtimes) this snapshot was read from."""
    warnings: tuple[str, ...] = field(default=())

    def text_chunks(self) -> Iterator[bytes]:
        """The uncompressed catalogd body, a chunk at a time (decompressed on each call)."""
        return text_chunks(self.jsonl_gzip)

    def select(self, keep: Callable[[MetaLine], bool]) -> Iterator[bytes]:
        """The lines of the body whose meta keys ``keep`` accepts (``/api/v1/metas``)."""
        return select(Body(self.jsonl_gzip, self.jsonl_size, self.lines), keep)


def directory_signature(root: str) -> str:
    """Return a digest that changes whenever a catalog file is added, removed or rewritten."""
    files, problems = list_catalog_files(root)
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.relpath}\0{f.signature}\n".encode("utf-8", "surrogateescape"))
    for p in problems:
        digest.update(f"problem\0{p}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def load_snapshot(root: str, *, name: str) -> Snapshot:
    """Load, validate and index the catalog in ``root``; raise SnapshotError when it is broken."""
    with gc_paused():  # building everything below allocates and frees no cycles
        return _load_snapshot(root, name=name)


def _load_snapshot(root: str, *, name: str) -> Snapshot:
    before = directory_signature(root)
    try:
        catalog, body = load_served(root, name=name)
    except CatalogLoadError as err:
        raise SnapshotError(f"cannot load: {err}") from None
    findings = validate(catalog)
    errors = [f for f in findings if _is_error(f)]
    if errors:
        raise SnapshotError(
            f"invalid catalog ({len(errors)} errors): " + "; ".join(str(f) for f in errors[:5])
        )
    try:
        view = RegistryView(catalog)
    except RegistryError as err:
        raise SnapshotError(f"invalid catalog: {err}") from None
    if directory_signature(root) != before:
        raise SnapshotError("the directory changed while it was being read; will retry")
    return Snapshot(
        catalog=catalog,
        view=view,
        jsonl_gzip=body.gzip,
        jsonl_size=body.size,
        lines=body.lines,
        last_modified=int(time.time()),
        signature=before,
        warnings=tuple(str(f) for f in findings if not _is_error(f)),
    )


def release_free_memory() -> None:
    """Hand memory freed by a load back to the OS (glibc keeps it otherwise).

    Parsing a catalog allocates several times its size in short-lived objects; without this the
    server's resident size stays at that peak for its whole life (measured: 103 -> 74 MiB on
    community-operators-prod-v4.16). A no-op where the C library has no ``malloc_trim``.
    """
    try:
        gc.collect()
        name = ctypes.util.find_library("c")
        if name is None:
            return
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
        if trim is not None:
            trim(0)
    except Exception as err:  # only memory is at stake: never fail a reload for it
        log.debug("cannot release free memory: %s", err)


def _is_error(finding: object) -> bool:
    severity = getattr(finding, "severity", "error")
    return str(getattr(severity, "value", severity)).lower() == "error"


DEFAULT_RELOAD_TIMEOUT = 120.0
"""Seconds a reload may run before it is reported as stuck (a full 200 MiB catalog loads in ~20 s
on one core)."""
STOP_TIMEOUT = 2.0
"""Seconds :meth:`Reloader.stop` waits for the poll thread (a stuck reload is left behind: the
thread is a daemon and never keeps the process alive)."""

KIND_INVALID = "invalid"
"""The directory does not hold a servable catalog (malformed, invalid, refused file)."""
KIND_UNEXPECTED = "unexpected"
"""A reload step raised an exception nobody expected (a bug, out of memory): retried later."""
KIND_STUCK = "stuck"
"""A reload has run longer than ``reload_timeout``."""


class ReloadMetrics:
    """The prometheus series that say whether the served catalog is the directory's current one."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reloads = Counter(
            "pivoter_catalog_reloads",
            "Catalog reload attempts by result (success or failure).",
            ["catalog", "result"],
            registry=registry,
        )
        self.last_ok = Gauge(
            "pivoter_catalog_reload_last_success",
            "1 when the last reload attempt succeeded, 0 when the served catalog is stale.",
            ["catalog"],
            registry=registry,
        )
        self.stale = Gauge(
            "pivoter_catalog_stale",
            "1 while the catalog being served is not the directory's current content (the last "
            "reload failed, or is stuck), 0 otherwise.",
            ["catalog"],
            registry=registry,
        )
        self.errors = Counter(
            "pivoter_catalog_reload_errors",
            "Failed reloads by kind: invalid (the directory's content or files), unexpected (an "
            "exception in a reload step), stuck (a reload over its timeout).",
            ["catalog", "kind"],
            registry=registry,
        )
        self.loaded_at = Gauge(
            "pivoter_catalog_loaded_timestamp_seconds",
            "When the catalog being served was loaded.",
            ["catalog"],
            registry=registry,
        )
        self.bundles = Gauge(
            "pivoter_catalog_bundles",
            "Bundles in the catalog being served.",
            ["catalog"],
            registry=registry,
        )


@dataclass(frozen=True, slots=True)
class Stale:
    """Why the catalog being served is not the directory's current content, and since when."""

    reason: str
    kind: str
    since: float
    """Wall-clock seconds of the first failure of this kind in a row."""


class Reloader:
    """Holds the current snapshot of one directory and reloads it when its files change."""

    def __init__(
        self,
        root: str,
        *,
        name: str,
        registry: CollectorRegistry | None = None,
        poll_interval: float = 2.0,
        reload_timeout: float = DEFAULT_RELOAD_TIMEOUT,
    ) -> None:
        self.root = root
        self.name = name
        self.poll_interval = poll_interval
        self.reload_timeout = reload_timeout
        self.metrics_registry = registry or CollectorRegistry()
        self.metrics = ReloadMetrics(self.metrics_registry)
        self.last_error: str | None = None
        self.stale: Stale | None = None
        self._bad: str | None = None  # signature of the last broken version seen
        self._retry_at = 0.0  # after an unexpected error: when to try the same version again
        self._lock = threading.Lock()
        try:
            self.current = load_snapshot(root, name=name)  # the first load must succeed
        except SnapshotError:
            raise
        except Exception as err:  # never a traceback for a directory that cannot be served
            raise SnapshotError(_unexpected(err)) from None
        release_free_memory()
        self._record_success(self.current)
        self._stop = threading.Event()
        self._no_thread = False
        self._thread: threading.Thread | None = None

    def _record_success(self, snapshot: Snapshot) -> None:
        self.metrics.reloads.labels(self.name, "success").inc()
        self.metrics.last_ok.labels(self.name).set(1)
        self.metrics.stale.labels(self.name).set(0)
        self.metrics.loaded_at.labels(self.name).set(snapshot.last_modified)
        self.metrics.bundles.labels(self.name).set(len(snapshot.catalog.bundles))

    def view(self) -> RegistryView:
        """Return the registry view of the current snapshot."""
        return self.current.view

    def stale_reason(self) -> str | None:
        """One line saying why the catalog served is not the directory's current content, or
        None when it is (what the servers advertise to clients)."""
        stale = self.stale
        if stale is None:
            return None
        loaded = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.current.last_modified))
        return f"serving the catalog loaded at {loaded}: {stale.reason}"

    def check(self) -> bool:
        """Reload if the directory changed; return True when a new snapshot was swapped in.

        Never raises: every failure keeps the last good snapshot and is reported.
        """
        with self._lock:
            signature = ""
            try:
                signature = directory_signature(self.root)
                return self._check(signature)
            except Exception as err:
                # A bug or an exhausted resource: report it, and try this version again later
                # (it may be transient) rather than on every poll.
                self._fail(_unexpected(err), signature, KIND_UNEXPECTED)
                self._retry_at = time.monotonic() + max(30.0, 10 * self.poll_interval)
                release_free_memory()
                return False

    def _check(self, signature: str) -> bool:
        if signature == self.current.signature:
            if self.stale is not None:
                # The directory went back to exactly what is being served (or a slow attempt
                # that was reported stuck found nothing new).
                self._recovered("the directory is back to the catalog being served")
            return False
        if signature == self._bad and time.monotonic() < self._retry_at:
            return False
        if signature == self._bad and self.stale is not None and self.stale.kind == KIND_INVALID:
            return False
        try:
            snapshot = load_snapshot(self.root, name=self.name)
        except (SnapshotError, OSError, UnicodeDecodeError) as err:
            self._fail(str(err), signature, KIND_INVALID)
            release_free_memory()
            return False
        if snapshot.last_modified <= self.current.last_modified:
            # Last-Modified has one-second resolution: two loads in the same second would let a
            # client's If-Modified-Since hide the second one (a 304 for new content).
            snapshot = replace(snapshot, last_modified=self.current.last_modified + 1)
        self.current = snapshot
        release_free_memory()
        self._recovered(
            f"reloaded: {len(snapshot.catalog.packages)} packages, "
            f"{len(snapshot.catalog.bundles)} bundles"
        )
        self._record_success(snapshot)
        return True

    def _recovered(self, message: str) -> None:
        self.last_error = None
        self.stale = None
        self._bad = None
        self._retry_at = 0.0
        self.metrics.last_ok.labels(self.name).set(1)
        self.metrics.stale.labels(self.name).set(0)
        log.info("catalog %s %s", self.name, message)

    def _fail(self, reason: str, signature: str, kind: str) -> None:
        reason = " ".join(reason.split())  # one line, whatever the loader said
        repeated = self.stale is not None and self.stale.reason == reason
        # Remember the broken version so it is reported once, not on every poll.
        self._bad = signature
        self.last_error = reason
        since = self.stale.since if self.stale is not None else time.time()
        self.stale = Stale(reason, kind, since)
        self.metrics.reloads.labels(self.name, "failure").inc()
        self.metrics.errors.labels(self.name, kind).inc()
        self.metrics.last_ok.labels(self.name).set(0)
        self.metrics.stale.labels(self.name).set(1)
        if not repeated:
            log.error("catalog %s: keeping the last good catalog: %s", self.name, reason)

    def start(self) -> None:
        """Poll the directory in a background thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="catalog-reload", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_interval):
            try:
                self._attempt()
            except Exception:  # pragma: no cover - _attempt catches everything itself
                log.exception("catalog %s: reload poller error (it keeps polling)", self.name)

    def _attempt(self) -> None:
        """Run one :meth:`check` in a worker thread; report it when it does not finish in time."""
        done = threading.Event()

        def work() -> None:
            try:
                self.check()
            finally:
                done.set()

        worker = threading.Thread(target=work, name="catalog-reload-attempt", daemon=True)
        started = time.monotonic()
        try:
            worker.start()
        except RuntimeError as exc:
            # No address space for another thread's stack (many clients at once, a tight
            # limit): one line, once, and the next poll tries again.
            if not self._no_thread:
                log.error("catalog %s: cannot start a reload now (%s); retrying", self.name, exc)
            self._no_thread = True
            return
        self._no_thread = False
        reported = False
        # Never two reloads at once: wait for this one, in slices, so that stop() is never kept
        # waiting, and report it once when it runs past reload_timeout.
        while not done.wait(min(0.5, self.reload_timeout)):
            if self._stop.is_set():
                return
            elapsed = time.monotonic() - started
            if not reported and elapsed >= self.reload_timeout and not done.is_set():
                reported = True
                self._stuck(elapsed)

    def _stuck(self, seconds: float) -> None:
        reason = (
            f"a reload has been running for {seconds:.0f}s without finishing (a file of "
            f"{self.root} that blocks reads, or a very slow disk?)"
        )
        # Not under the lock: the stuck check() holds it.
        self.last_error = reason
        since = self.stale.since if self.stale is not None else time.time()
        self.stale = Stale(reason, KIND_STUCK, since)
        self.metrics.reloads.labels(self.name, "failure").inc()
        self.metrics.errors.labels(self.name, KIND_STUCK).inc()
        self.metrics.last_ok.labels(self.name).set(0)
        self.metrics.stale.labels(self.name).set(1)
        log.error("catalog %s: keeping the last good catalog: %s", self.name, reason)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop polling; wait at most ``timeout`` seconds (a stuck reload is left behind)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


def _unexpected(err: BaseException) -> str:
    text = " ".join(str(err).split())[:500]
    return f"unexpected error while reloading ({type(err).__name__}: {text or 'no message'})"
