"""``pivoter run``'s flags become the daemon's typed settings, with the daemon's defaults; the
tests' entry point turns its environment into hooks and nothing else does."""

from __future__ import annotations

from pathlib import Path

from pivoter.cli.main import build_parser
from pivoter.cli.run import settings_from
from pivoter.daemon.settings import (
    DEFAULT_STORE,
    Election,
    RunSettings,
    Scope,
    Settings,
    Webhook,
)
from tests.e2e.hooked import HOLD_FILE, PAUSE_ADOPTION_AT, PAUSE_PIVOT_AT, hooks_from


def _settings(*flags: str) -> RunSettings:
    return settings_from(build_parser().parse_args(["run", *flags]))


def test_no_flags_are_the_daemon_defaults() -> None:
    settings = _settings()
    assert settings == RunSettings(
        product=Settings(catalogd_address=("0.0.0.0", 8082)),
        metrics_address=("0.0.0.0", 8080),
        health_address=("0.0.0.0", 8081),
    )
    assert settings.product.store_dir == DEFAULT_STORE
    assert settings.product.scope is Scope.ALL
    assert settings.product.olmv1 == "auto"


def test_leader_election_defaults_are_the_settings_defaults() -> None:
    assert _settings("--leader-elect").election == Election()


def test_every_flag_reaches_its_setting(tmp_path: Path) -> None:
    settings = _settings(
        "--namespace",
        "ops",
        "--store-dir",
        str(tmp_path),
        "--content-bind-address",
        "127.0.0.1:9000",
        "--content-url",
        "http://content.example",
        "--platform-operator-service-account",
        "ops/installer",
        "--olmv1",
        "serve",
        "--catalogd-bind-address",
        "0",
        "--catalogd-url",
        "http://catalogd.example",
        "--adopt-olmv0",
        "--webhook-bind-address",
        ":9443",
        "--webhook-service",
        "ops/pivoter-webhook",
        "--leader-elect",
        "--leader-election-id",
        "lease",
        "--leader-election-lease-duration",
        "30",
    )
    assert settings.product == Settings(
        namespace="ops",
        store_dir=tmp_path,
        content_address=("127.0.0.1", 9000),
        content_url="http://content.example",
        platform_operator_service_account=("ops", "installer"),
        olmv1="serve",
        catalogd_address=None,
        catalogd_url="http://catalogd.example",
        adopt_olmv0=True,
        webhook=Webhook(address=("0.0.0.0", 9443), service=("ops", "pivoter-webhook")),
    )
    assert settings.election == Election(name="lease", lease_duration=30.0)


def test_no_hook_variable_means_no_hooks() -> None:
    hooks = hooks_from({"PATH": "/bin"})
    assert hooks.pivot_transition is None
    assert hooks.adoption_step is None


def test_hook_variables_become_hooks(tmp_path: Path) -> None:
    assert hooks_from({PAUSE_PIVOT_AT: "Waiting"}).pivot_transition is not None
    assert hooks_from({HOLD_FILE: str(tmp_path / "hold")}).pivot_transition is not None
    assert hooks_from({PAUSE_ADOPTION_AT: "Installing"}).adoption_step is not None
