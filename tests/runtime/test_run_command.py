"""``pivoter run`` without a cluster: its flags, and failures that must be quick and clear."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Address
from pivoter.cli.main import build_parser
from pivoter.cli.run import settings_from
from tests.clirun import pivoter


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return pivoter("run", *args, timeout=timeout)


def test_flags_and_defaults() -> None:
    args = build_parser().parse_args(["run"])
    assert args.metrics_bind_address == Address("", 8080)
    assert args.health_probe_bind_address == Address("", 8081)
    assert args.leader_elect is False
    assert args.leader_election_id == "pivoter-leader.pivoter.io"
    assert (
        args.leader_election_lease_duration,
        args.leader_election_renew_deadline,
        args.leader_election_retry_period,
    ) == (15.0, 10.0, 2.0)
    assert (args.log_format, args.log_level) == ("json", "info")


def test_concurrent_sets_the_workers_and_is_checked() -> None:
    assert settings_from(build_parser().parse_args(["run"])).product.concurrent == 4
    args = build_parser().parse_args(["run", "--concurrent", "8"])
    assert settings_from(args).product.concurrent == 8
    result = _run("--concurrent", "0")
    assert result.returncode == ExitCode.USAGE
    assert "--concurrent" in result.stderr
    assert "0 is out of range (1-64)" in result.stderr


def test_a_missing_kubeconfig_fails_fast_and_says_so(tmp_path: Path) -> None:
    result = _run("--kubeconfig", str(tmp_path / "nope"))
    assert result.returncode == ExitCode.FAILURE
    assert f"kubeconfig {tmp_path / 'nope'} does not exist" in result.stderr


def test_an_unusable_kubeconfig_fails_fast(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    result = _run("--kubeconfig", str(bad))
    assert result.returncode == ExitCode.FAILURE
    assert "is unusable" in result.stderr


def test_unsafe_leader_election_timing_is_refused(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    result = _run(
        "--kubeconfig",
        str(kubeconfig),
        "--leader-elect",
        "--leader-election-lease-duration",
        "5",
        "--leader-election-renew-deadline",
        "10",
    )
    assert result.returncode == ExitCode.FAILURE
    assert "must exceed the renew deadline" in result.stderr


def test_a_busy_port_fails_before_any_cluster_work(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _run(
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-bind-address",
            f"127.0.0.1:{port}",
            "--health-probe-bind-address",
            "0",
        )
    assert result.returncode == ExitCode.FAILURE
    assert f"cannot serve metrics on 127.0.0.1:{port}: the port is in use" in result.stderr
