"""The figures of ``bench/daemon_scale.py`` and the Markdown tables made of them (pure: no
cluster, tested in ``tests/unit/test_bench_daemon_scale.py``).

Growth from 1x to 10x is read as an exponent: a cost that is ``c · F^k`` at factor F has
``k = log(cost_F / cost_1) / log(F)``; k near 1 is linear, k near 0 constant, and k clearly
above 1 grows faster than linearly (what issue 18 asks to find and remove).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "ChangeResult",
    "FactorResult",
    "ProcessFigures",
    "exponent",
    "growth_table",
    "kube_requests",
    "processes_table",
    "scale_table",
]

LEASES = "leases.coordination.k8s.io"


@dataclass
class ProcessFigures:
    """One process sampled in the idle window."""

    name: str
    pid: int
    cpu: list[float] = field(default_factory=list)
    """Per-interval CPU, % of one core."""
    rss: list[float] = field(default_factory=list)
    """Per-interval VmRSS, MiB."""
    total_cpu: float = 0.0
    """CPU over the whole window, % of one core."""
    peak: float = 0.0
    """VmHWM at the end of the window, MiB."""

    @property
    def rss_median(self) -> float:
        return statistics.median(self.rss) if self.rss else 0.0


@dataclass(frozen=True)
class ChangeResult:
    """One catalog change offering a new version of 100 packages."""

    detected: float
    """t0 (the Catalog's spec changed, the server serving the new content) → content digest
    moved, seconds."""
    first: float
    """Detected → the first of the 100 Resolutions Ready on the new revision, child Installed."""
    last: float
    """Detected → the last of them."""
    cpu: float
    """Daemon CPU seconds from t0 to the last."""
    requests: float
    """API requests the daemon sent meanwhile."""
    reconciles: float
    """Resolution reconciles meanwhile."""
    by_request: dict[str, float] = field(default_factory=dict)
    """The requests by ``verb resource``."""


@dataclass
class FactorResult:
    """Everything measured at one factor."""

    factor: int
    resolutions: int
    bundle_deployments: int
    timings: dict[str, float]
    """Seconds: ``cluster`` start, ``images`` pushed, ``create`` (the bench's creates),
    ``installed`` (create start → all Ready/Installed), ``resolutions_ready`` and
    ``bds_installed`` (from the end of the creates), and ``base_rss`` (MiB, the daemon before
    any input existed)."""
    processes: list[ProcessFigures]
    """The daemon first, then the catalog server and the control plane's processes."""
    requests: dict[str, float]
    """The daemon's API requests in the idle window, by ``verb resource``."""
    window: float
    changes: list[ChangeResult]
    busiest_minute: float = math.nan
    """The daemon's API requests per second in the busiest 60 s of the warm-up after setup."""
    wide: ChangeResult | None = None
    """A change offering a new version of every package (``--wide``)."""

    @property
    def daemon(self) -> ProcessFigures:
        return self.processes[0]

    @property
    def requests_per_minute(self) -> float:
        return 60 * sum(self.requests.values()) / self.window if self.window else 0.0

    @property
    def lease_requests_per_minute(self) -> float:
        lease = sum(v for k, v in self.requests.items() if k.endswith(" " + LEASES))
        return 60 * lease / self.window if self.window else 0.0

    def change_median(self, read: Callable[[ChangeResult], float]) -> float:
        return statistics.median(read(c) for c in self.changes) if self.changes else math.nan


def kube_requests(metrics: str) -> dict[str, float]:
    """``pivoter_kube_requests_total`` from a ``/metrics`` text, summed per ``verb resource``
    (all codes)."""
    totals: dict[str, float] = {}
    for line in metrics.splitlines():
        if not line.startswith("pivoter_kube_requests_total{"):
            continue
        labels_text, _, value = line.partition("} ")
        labels: dict[str, str] = {}
        for part in labels_text.removeprefix("pivoter_kube_requests_total{").split(","):
            name, _, text = part.partition("=")
            labels[name] = text.strip('"')
        key = f"{labels['verb']} {labels['resource']}"
        totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def exponent(values: Mapping[int, float]) -> float:
    """k of ``cost ∝ F^k`` between the smallest and the largest factor (nan if unknown)."""
    factors = sorted(f for f, v in values.items() if v > 0 and not math.isnan(v))
    if len(factors) < 2:
        return math.nan
    low, high = factors[0], factors[-1]
    return math.log(values[high] / values[low]) / math.log(high / low)


def _cells(results: Sequence[FactorResult], read: Callable[[FactorResult], float], fmt: str) -> str:
    return " | ".join(format(read(r), fmt) for r in results)


def scale_table(results: Sequence[FactorResult]) -> list[str]:
    """One row per measurement, one column per factor."""
    if not results:
        return []
    head = " | ".join(f"{r.factor}x" for r in results)
    rows: list[tuple[str, Callable[[FactorResult], float], str]] = [
        ("Resolutions (each Installed, one child)", lambda r: r.resolutions, ".0f"),
        ("BundleDeployments (children + standalone)", lambda r: r.bundle_deployments, ".0f"),
        ("setup: control plane start, s", lambda r: r.timings.get("cluster", math.nan), ".0f"),
        ("setup: bundle images pushed, s", lambda r: r.timings.get("images", math.nan), ".0f"),
        ("setup: creates → all Ready and Installed, s", lambda r: r.timings["installed"], ".0f"),
        ("daemon RSS before any input, MiB", lambda r: r.timings.get("base_rss", math.nan), ".0f"),
        ("**daemon RSS, idle median, MiB**", lambda r: r.daemon.rss_median, ".0f"),
        ("daemon RSS peak (VmHWM), MiB", lambda r: r.daemon.peak, ".0f"),
        ("**daemon idle CPU, % of a core**", lambda r: r.daemon.total_cpu, ".2f"),
        ("**daemon API requests per minute, idle**", lambda r: r.requests_per_minute, ".1f"),
        ("... of which the Lease (leader election)", lambda r: r.lease_requests_per_minute, ".1f"),
        (
            "catalog change: t0 → detected, s",
            lambda r: r.change_median(lambda c: c.detected),
            ".2f",
        ),
        (
            "detected → first of the 100 pivoted, s",
            lambda r: r.change_median(lambda c: c.first),
            ".1f",
        ),
        (
            "**detected → all 100 pivoted, s**",
            lambda r: r.change_median(lambda c: c.last),
            ".1f",
        ),
        ("daemon CPU per change, s", lambda r: r.change_median(lambda c: c.cpu), ".1f"),
        (
            "daemon API requests per change",
            lambda r: r.change_median(lambda c: c.requests),
            ".0f",
        ),
        (
            "Resolution reconciles per change",
            lambda r: r.change_median(lambda c: c.reconciles),
            ".0f",
        ),
        (
            "**API requests per second, busiest minute of the warm-up after setup**",
            lambda r: r.busiest_minute,
            ".1f",
        ),
        (
            "**a change of every input (`--wide`): detected → all pivoted, s**",
            lambda r: r.wide.last if r.wide else math.nan,
            ".1f",
        ),
        (
            "... detected → first pivoted, s",
            lambda r: r.wide.first if r.wide else math.nan,
            ".1f",
        ),
        ("... daemon CPU, s", lambda r: r.wide.cpu if r.wide else math.nan, ".1f"),
        ("... daemon API requests", lambda r: r.wide.requests if r.wide else math.nan, ".0f"),
    ]
    lines = [f"| measurement | {head} |", "|---|" + "---|" * len(results)]
    lines += [f"| {text} | {_cells(results, read, fmt)} |" for text, read, fmt in rows]
    return lines


def _growth_rows() -> list[tuple[str, Callable[[FactorResult], float], str]]:
    return [
        (
            "setup, s per Resolution+BundleDeployment pair",
            lambda r: r.timings["installed"] / r.resolutions,
            ".2f",
        ),
        (
            "RSS above the empty daemon, KiB per BundleDeployment",
            lambda r: (
                1024 * (r.daemon.rss_median - r.timings.get("base_rss", 0.0)) / r.bundle_deployments
            ),
            ".0f",
        ),
        (
            "idle CPU, % of a core per 1000 BundleDeployments",
            lambda r: 1000 * r.daemon.total_cpu / r.bundle_deployments,
            ".3f",
        ),
        (
            "idle API requests per minute (without the Lease) per 1000 BundleDeployments",
            lambda r: (
                1000 * (r.requests_per_minute - r.lease_requests_per_minute) / r.bundle_deployments
            ),
            ".2f",
        ),
        (
            "100-pivot time (detected → all), s",
            lambda r: r.change_median(lambda c: c.last),
            ".1f",
        ),
        ("daemon CPU per change, s", lambda r: r.change_median(lambda c: c.cpu), ".1f"),
    ]


def growth_table(results: Sequence[FactorResult]) -> list[str]:
    """Per-object figures per factor and the exponent k of the raw cost (``∝ F^k``)."""
    if not results:
        return []
    head = " | ".join(f"{r.factor}x" for r in results)
    lines = [f"| per object | {head} | k (cost ∝ F^k) |", "|---|" + "---|" * (len(results) + 1)]
    raw: list[Callable[[FactorResult], float]] = [
        lambda r: r.timings["installed"],
        lambda r: r.daemon.rss_median - r.timings.get("base_rss", 0.0),
        lambda r: r.daemon.total_cpu,
        lambda r: r.requests_per_minute - r.lease_requests_per_minute,
        lambda r: r.change_median(lambda c: c.last),
        lambda r: r.change_median(lambda c: c.cpu),
    ]
    for (text, read, fmt), cost in zip(_growth_rows(), raw, strict=True):
        k = exponent({r.factor: cost(r) for r in results})
        lines.append(f"| {text} | {_cells(results, read, fmt)} | {k:.2f} |")
    return lines


def processes_table(result: FactorResult) -> list[str]:
    """The daemon and its peers in the idle window (same run)."""
    lines = [
        "| process | CPU % of a core (window) | CPU % median / peak per interval "
        "| RSS median MiB | RSS peak MiB |",
        "|---|---|---|---|---|",
    ]
    for p in result.processes:
        cpu = f"{statistics.median(p.cpu):.2f} / {max(p.cpu):.2f}" if p.cpu else "n/a"
        lines.append(
            f"| {p.name} | {p.total_cpu:.2f} | {cpu} | {p.rss_median:.0f} | {p.peak:.0f} |"
        )
    top = sorted(result.requests.items(), key=lambda kv: -kv[1])[:8]
    if top:
        lines += ["", "Daemon API requests in the window, by verb and resource:", ""]
        lines += [
            f"* {key}: {value:.0f} ({60 * value / result.window:.1f}/min)" for key, value in top
        ]
    first = result.changes[0] if result.changes else None
    if first is not None and first.by_request:
        top = sorted(first.by_request.items(), key=lambda kv: -kv[1])[:12]
        lines += ["", "Daemon API requests in the first catalog change, by verb and resource:", ""]
        lines += [f"* {key}: {value:.0f}" for key, value in top]
    return lines
