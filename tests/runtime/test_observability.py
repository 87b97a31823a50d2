"""The probe and metrics endpoints over real HTTP, and the JSON log format."""

from __future__ import annotations

import io
import json
import logging
import socket
import sys
import urllib.error
import urllib.request

import pytest

from pivoter.observability import (
    Endpoints,
    EndpointsError,
    JSONFormatter,
    Metrics,
    parse_address,
    setup_logging,
)


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_addresses() -> None:
    assert parse_address(":8080") == ("0.0.0.0", 8080)
    assert parse_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_address("0") is None
    with pytest.raises(EndpointsError, match="not host:port"):
        parse_address("localhost")


def test_probes_report_each_failing_check_and_metrics_are_served() -> None:
    metrics = Metrics(process=False)
    metrics.queue_depth.labels("q").set(3)
    state = {"synced": False}
    endpoints = Endpoints(
        ("127.0.0.1", 0),
        registry=metrics.registry,
        healthz={"ping": lambda: None},
        readyz={"synced": lambda: None if state["synced"] else "waiting for configmaps"},
    )
    endpoints.start()
    try:
        assert _get(endpoints.port, "/healthz") == (200, "healthz check passed\n")
        status, body = _get(endpoints.port, "/readyz")
        assert status == 500
        assert "[-]synced failed: waiting for configmaps" in body
        state["synced"] = True
        status, body = _get(endpoints.port, "/readyz?verbose")
        assert status == 200
        assert "[+]synced ok" in body
        status, body = _get(endpoints.port, "/metrics")
        assert status == 200
        assert 'workqueue_depth{name="q"} 3.0' in body
        assert _get(endpoints.port, "/nope")[0] == 404
    finally:
        endpoints.stop()


def test_a_check_that_raises_fails_the_probe() -> None:
    def broken() -> None:
        raise RuntimeError("lease unreadable")

    endpoints = Endpoints(("127.0.0.1", 0), healthz={"lease": broken})
    endpoints.start()
    try:
        status, body = _get(endpoints.port, "/healthz")
    finally:
        endpoints.stop()
    assert status == 500
    assert "lease unreadable" in body


def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(
            EndpointsError, match=rf"metrics on 127.0.0.1:{port}: the port is in use"
        ):
            Endpoints(("127.0.0.1", port), what="metrics")


def test_json_logs_are_one_object_per_line_with_extras_and_tracebacks() -> None:
    record = logging.LogRecord("pivoter.x", logging.ERROR, __file__, 1, "failed %s", ("k",), None)
    record.controller = "bundles"
    try:
        raise ValueError("boom")
    except ValueError:
        record.exc_info = sys.exc_info()
    entry = json.loads(JSONFormatter().format(record))
    assert entry["level"] == "error"
    assert entry["msg"] == "failed k"
    assert entry["logger"] == "pivoter.x"
    assert entry["controller"] == "bundles"
    assert "ValueError: boom" in entry["exc"]
    assert entry["ts"].endswith("+00:00")


def test_setup_logging_switches_format_and_level() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        setup_logging("text", "warning", stream=stream)
        logging.getLogger("pivoter.t").info("hidden")
        logging.getLogger("pivoter.t").warning("shown")
        assert "hidden" not in stream.getvalue()
        assert "WARNING pivoter.t: shown" in stream.getvalue()
        with pytest.raises(ValueError, match="log format"):
            setup_logging("xml", "info")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
