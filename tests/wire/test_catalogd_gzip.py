"""The catalogd client on gzip bodies that never end or carry more than one member.

Before ``resolver.decompress``: data after the gzip member piled up in zlib's ``unused_data``
(copied on every chunk: quadratic, 25 MiB in 5 s, and memory up to the 2 GiB wire cap), and an
endless FNAME was read until the wire cap or the deadline.
"""

from __future__ import annotations

import functools
import gzip
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pivoter.cli.exitcodes import ExitCode
from resolver.catalog.sources import CatalogdSource, CatalogSourceError
from tests.clirun import pivoter
from tests.wire.conftest import run_in_thread

LINE = b'{"schema":"olm.package","name":"x"}\n'
ENDLESS = {
    "trailing": (gzip.compress(LINE), b"G" * 65536),
    "fname": (b"\x1f\x8b\x08\x08" + b"\0" * 6, b"A" * 65536),
    "empty-members": (b"", gzip.compress(b"") * 3000),
}


@functools.cache
def _tiny() -> bytes:
    """7 million tiny objects (105 MB, about 0.5 MB on the wire): 4 GB once parsed, before the
    received catalog's memory budget."""
    return gzip.compress(b'{"schema":"x"}\n' * 7_000_000, compresslevel=1)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/jsonl")
        self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        name = self.path.split("/")[2]
        try:
            if name == "members":
                self.wfile.write(gzip.compress(LINE) + gzip.compress(LINE.replace(b"x", b"y")))
                return
            if name == "tiny":
                self.wfile.write(_tiny())
                return
            head, unit = ENDLESS[name]
            self.wfile.write(head)
            for _ in range(20_000):  # at most ~1.3 GiB, however the client behaves
                self.wfile.write(unit)
        except OSError:
            return
        finally:
            self.close_connection = True

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    run_in_thread(httpd.serve_forever)
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("name", sorted(ENDLESS))
def test_endless_gzip_bodies_are_refused_fast(server: str, name: str) -> None:
    started = time.monotonic()
    with pytest.raises(CatalogSourceError, match="bad gzip stream") as refused:
        CatalogdSource(f"{server}/catalogs/{name}", timeout=5).fetch()
    assert time.monotonic() - started < 5
    assert "\n" not in str(refused.value)


def test_the_cli_refuses_an_endless_body_under_one_gib(server: str) -> None:
    result = pivoter(
        "catalog", "render", f"{server}/catalogs/trailing", address_space=1 << 30, timeout=30
    )
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == ExitCode.FAILURE, result.stderr
    assert result.stderr.count("\n") == 1
    assert "bad gzip stream" in result.stderr


def test_a_multi_member_body_is_read_whole(server: str) -> None:
    catalog = CatalogdSource(f"{server}/catalogs/members", timeout=5).fetch()
    assert sorted(p.name for p in catalog.packages) == ["x", "y"]


def test_a_body_of_millions_of_tiny_objects_is_refused_within_its_first_kilobytes(
    server: str,
) -> None:
    started = time.monotonic()
    result = pivoter(
        "catalog", "render", f"{server}/catalogs/tiny", address_space=1 << 30, timeout=30
    )
    assert result.returncode == ExitCode.FAILURE, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert "in memory, more than the memory budget of a received catalog" in result.stderr
    assert time.monotonic() - started < 10
