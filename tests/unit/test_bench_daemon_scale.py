"""bench/daemon_scale_report.py without a cluster: the daemon's request counter is read from
``/metrics`` text, growth is read as the exponent of ``cost ∝ F^k``, and the tables carry the
figures of each factor."""

from __future__ import annotations

import math

import pytest

from bench.daemon_scale_report import (
    ChangeResult,
    FactorResult,
    ProcessFigures,
    exponent,
    growth_table,
    kube_requests,
    processes_table,
    scale_table,
)

METRICS = """\
# HELP pivoter_kube_requests_total Requests sent to the API server
# TYPE pivoter_kube_requests_total counter
pivoter_kube_requests_total{code="200",resource="configmaps",verb="get"} 6.0
pivoter_kube_requests_total{code="404",resource="configmaps",verb="get"} 2.0
pivoter_kube_requests_total{code="200",resource="leases.coordination.k8s.io",verb="update"} 30.0
pivoter_kube_requests_created{code="200",resource="configmaps",verb="get"} 1.7e9
pivoter_reconcile_total{controller="resolutions",result="success"} 4.0
"""


def test_requests_are_summed_per_verb_and_resource_over_codes() -> None:
    assert kube_requests(METRICS) == {
        "get configmaps": 8.0,
        "update leases.coordination.k8s.io": 30.0,
    }


def test_growth_is_the_exponent_between_the_smallest_and_largest_factor() -> None:
    assert exponent({1: 2.0, 3: 6.0, 10: 20.0}) == pytest.approx(1.0)
    assert exponent({1: 2.0, 10: 200.0}) == pytest.approx(2.0)
    assert exponent({1: 5.0, 10: 5.0}) == pytest.approx(0.0)
    assert math.isnan(exponent({1: 5.0}))
    assert math.isnan(exponent({1: 0.0, 10: 3.0}))


def _result(factor: int, rss: float, cpu: float, pivot: float) -> FactorResult:
    daemon = ProcessFigures("pivoter run (daemon)", 1, cpu=[cpu], rss=[rss], total_cpu=cpu)
    daemon.peak = rss + 1
    return FactorResult(
        factor=factor,
        resolutions=100 * factor,
        bundle_deployments=200 * factor,
        timings={"installed": 100.0 * factor, "base_rss": 80.0},
        processes=[daemon, ProcessFigures("etcd", 2, cpu=[1.0], rss=[50.0], total_cpu=1.0)],
        requests={"update leases.coordination.k8s.io": 60.0, "get configmaps": 12.0 * factor},
        window=60.0,
        changes=[
            ChangeResult(1.0, 2.0, pivot, 10.0, 500.0, 100.0 * factor, {"get configmaps": 300.0})
        ],
    )


def test_tables_show_each_factor_and_linear_growth_reads_k_1() -> None:
    results = [_result(1, 100.0, 0.5, 20.0), _result(10, 280.0, 5.0, 200.0)]
    scale = "\n".join(scale_table(results))
    assert "| measurement | 1x | 10x |" in scale
    assert "| **daemon RSS, idle median, MiB** | 100 | 280 |" in scale
    assert "| **daemon API requests per minute, idle** | 72.0 | 180.0 |" in scale
    assert "| ... of which the Lease (leader election) | 60.0 | 60.0 |" in scale
    assert "| **detected → all 100 pivoted, s** | 20.0 | 200.0 |" in scale
    growth = "\n".join(growth_table(results))
    # RSS above the empty daemon: 20 MiB for 200 objects, 200 MiB for 2000: linear.
    assert "| RSS above the empty daemon, KiB per BundleDeployment | 102 | 102 | 1.00 |" in growth
    assert "| 100-pivot time (detected → all), s | 20.0 | 200.0 | 1.00 |" in growth
    processes = "\n".join(processes_table(results[0]))
    assert "| etcd | 1.00 | 1.00 / 1.00 | 50 | 0 |" in processes
    assert "* update leases.coordination.k8s.io: 60 (60.0/min)" in processes
    assert "in the first catalog change, by verb and resource" in processes
    assert "* get configmaps: 300" in processes
