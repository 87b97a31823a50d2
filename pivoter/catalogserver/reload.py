"""Load a catalog directory into an immutable snapshot, and reload it when the directory changes.

``pivoter catalog serve`` (:mod:`pivoter.catalogserver.serve`) builds one :class:`Reloader`; the
gRPC and HTTP servers read :attr:`Reloader.current` on every request. A reload loads the
directory with the shared loader, validates it, builds the registry view and the catalogd JSONL,
and only then swaps the snapshot (one attribute assignment): readers see the old catalog or the
new one, never a mix. A broken edit keeps the last good snapshot; the reason is logged and shown
by the ``pivoter_catalog_reload_*`` metrics.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import gzip
import hashlib
import logging
import threading
import time
from dataclasses import dataclass, field, replace

from prometheus_client import CollectorRegistry, Counter, Gauge

from pivoter.catalogserver import gojson
from pivoter.catalogserver.registry import RegistryError, RegistryView
from resolver.catalog import model
from resolver.catalog.decode import meta_of
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.parse import parse_text
from resolver.catalog.validate import validate
from resolver.catalog.walk import list_catalog_files

log = logging.getLogger(__name__)


class SnapshotError(Exception):
    """The directory does not hold a servable catalog right now; the message says why."""


@dataclass(frozen=True, slots=True)
class MetaLine:
    """Where one object sits in the JSONL body, and its meta keys (for ``/api/v1/metas``)."""

    schema: str
    package: str
    name: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One loaded, validated catalog and everything the servers derive from it."""

    catalog: model.Catalog
    view: RegistryView
    jsonl_gzip: bytes
    """The catalogd body, gzip-compressed: most clients ask for gzip, and holding only this copy
    keeps a catalog's text at a quarter of its size in memory."""
    jsonl_size: int
    """Length of the uncompressed body."""
    lines: tuple[MetaLine, ...]
    last_modified: int
    """Whole seconds since the epoch when this snapshot was loaded (HTTP ``Last-Modified``)."""
    signature: str
    """Digest of the file list (names, sizes, mtimes) this snapshot was read from."""
    warnings: tuple[str, ...] = field(default=())

    def jsonl(self) -> bytes:
        """The uncompressed catalogd body (decompressed on each call)."""
        return gzip.decompress(self.jsonl_gzip)


def directory_signature(root: str) -> str:
    """Return a digest that changes whenever a catalog file is added, removed or rewritten."""
    files, problems = list_catalog_files(root)
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.relpath}\0{f.signature}\n".encode("utf-8", "surrogateescape"))
    for p in problems:
        digest.update(f"problem\0{p}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def render_jsonl(root: str) -> tuple[bytes, tuple[MetaLine, ...]]:
    """Return the catalog as catalogd serves it: one Go-encoded object per line, in walk order."""
    files, problems = list_catalog_files(root)
    if problems:
        raise SnapshotError("; ".join(str(p) for p in problems))
    chunks: list[bytes] = []
    lines: list[MetaLine] = []
    offset = 0
    for f in files:
        with open(f.path, encoding="utf-8") as handle:
            parsed = parse_text(handle.read())
        if parsed.problems:
            line, message = parsed.problems[0]
            raise SnapshotError(f"{f.relpath}:{line}: {message}")
        for blob, _line in parsed.objects:
            schema, package, name = meta_of(blob)
            data = (gojson.dumps(blob) + "\n").encode()
            lines.append(MetaLine(schema, package, name, offset, offset + len(data)))
            chunks.append(data)
            offset += len(data)
    return b"".join(chunks), tuple(lines)


def load_snapshot(root: str, *, name: str) -> Snapshot:
    """Load, validate and index the catalog in ``root``; raise SnapshotError when it is broken."""
    before = directory_signature(root)
    try:
        catalog = load_directory(root, name=name)
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
    jsonl, lines = render_jsonl(root)
    if directory_signature(root) != before:
        raise SnapshotError("the directory changed while it was being read; will retry")
    return Snapshot(
        catalog=catalog,
        view=view,
        # Compressed once per load: /api/v1/all is the hot path and gzip is what clients ask for.
        jsonl_gzip=gzip.compress(jsonl, compresslevel=6, mtime=0),
        jsonl_size=len(jsonl),
        lines=lines,
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
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    if trim is not None:
        trim(0)


def _is_error(finding: object) -> bool:
    severity = getattr(finding, "severity", "error")
    return str(getattr(severity, "value", severity)).lower() == "error"


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


class Reloader:
    """Holds the current snapshot of one directory and reloads it when its files change."""

    def __init__(
        self,
        root: str,
        *,
        name: str,
        registry: CollectorRegistry | None = None,
        poll_interval: float = 2.0,
    ) -> None:
        self.root = root
        self.name = name
        self.poll_interval = poll_interval
        self.metrics_registry = registry or CollectorRegistry()
        self.metrics = ReloadMetrics(self.metrics_registry)
        self.last_error: str | None = None
        self._bad: str | None = None  # signature of the last broken version seen
        self.current = load_snapshot(root, name=name)  # the first load must succeed
        release_free_memory()
        self._record_success(self.current)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record_success(self, snapshot: Snapshot) -> None:
        self.metrics.reloads.labels(self.name, "success").inc()
        self.metrics.last_ok.labels(self.name).set(1)
        self.metrics.loaded_at.labels(self.name).set(snapshot.last_modified)
        self.metrics.bundles.labels(self.name).set(len(snapshot.catalog.bundles))

    def view(self) -> RegistryView:
        """Return the registry view of the current snapshot."""
        return self.current.view

    def check(self) -> bool:
        """Reload if the directory changed; return True when a new snapshot was swapped in."""
        try:
            signature = directory_signature(self.root)
        except OSError as err:
            self._fail(f"cannot list {self.root}: {err}", "")
            return False
        if signature in (self.current.signature, self._bad):
            return False
        try:
            snapshot = load_snapshot(self.root, name=self.name)
        except (SnapshotError, OSError, UnicodeDecodeError) as err:
            self._fail(str(err), signature)
            release_free_memory()
            return False
        if snapshot.last_modified <= self.current.last_modified:
            # Last-Modified has one-second resolution: two loads in the same second would let a
            # client's If-Modified-Since hide the second one (a 304 for new content).
            snapshot = replace(snapshot, last_modified=self.current.last_modified + 1)
        self.current = snapshot
        release_free_memory()
        self.last_error = None
        self._bad = None
        self._record_success(snapshot)
        log.info(
            "catalog %s reloaded: %d packages, %d bundles",
            self.name,
            len(snapshot.catalog.packages),
            len(snapshot.catalog.bundles),
        )
        return True

    def _fail(self, reason: str, signature: str) -> None:
        # Remember the broken version so it is reported once, not on every poll.
        self._bad = signature
        self.last_error = reason
        self.metrics.reloads.labels(self.name, "failure").inc()
        self.metrics.last_ok.labels(self.name).set(0)
        log.error("catalog %s: keeping the last good catalog: %s", self.name, reason)

    def start(self) -> None:
        """Poll the directory in a background thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="catalog-reload", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_interval):
            self.check()

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
