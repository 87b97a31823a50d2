"""Every HTTP client connection of pivoter comes from :func:`resolver.net.open_connection`.

A connection built any other way has only per-read timeouts (a dripping peer holds it open) and
skips the credential check. This test fails when code constructs one directly, so a new client
has to go through the budgeted one.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {Path("resolver/net/http.py")}
RAW_CLIENT = re.compile(
    r"\bHTTPS?Connection\(|\burlopen\(|\bcreate_connection\(|^\s*(?:import|from)\s+"
    r"(?:urllib\.request|requests|httpx|aiohttp)\b",
    re.MULTILINE,
)


def _python_files() -> list[Path]:
    return [
        path.relative_to(ROOT)
        for package in ("pivoter", "resolver", "provisioners")
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


def test_no_http_connection_is_built_outside_resolver_net() -> None:
    offenders = [
        f"{path}: {match.group(0).strip()}"
        for path in _python_files()
        if path not in ALLOWED
        for match in RAW_CLIENT.finditer((ROOT / path).read_text(encoding="utf-8"))
    ]
    assert offenders == [], "build HTTP connections with resolver.net.open_connection"


def test_the_check_finds_a_raw_connection() -> None:
    planted = "conn = http.client.HTTPSConnection(host, 443, timeout=30)\nimport requests\n"
    assert len(RAW_CLIENT.findall(planted)) == 2
    assert RAW_CLIENT.search("connection: http.client.HTTPConnection,") is None
