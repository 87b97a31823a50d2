"""The catalogd HTTP API: our server reproduces catalogd's bytes and answers; our client reads it
(and catalogd-shaped servers that misbehave) safely."""

from __future__ import annotations

import gzip
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from resolver.catalog.load import load_directory
from resolver.catalog.sources import CatalogdSource, CatalogSourceError, open_source
from tests.wire.conftest import DATA, PivoterServer, run_in_thread


def _get(url: str, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_all_reproduces_catalogds_expected_output(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    server = pivoter_server(DATA / "test-catalog")
    # catalogd's own expected_all.json for its test catalog (copied verbatim with it).
    expected = (DATA / "test-catalog" / "expected_all.json").read_bytes()
    status, headers, body = _get(server.base_url + "/api/v1/all")
    assert status == 200
    assert body == expected
    assert headers["Content-Type"] == "application/jsonl"
    assert "Last-Modified" in headers


def test_all_is_one_sorted_compact_object_per_line(
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    import json

    server = pivoter_server(DATA / "crafted")
    _, _, body = _get(server.base_url + "/api/v1/all")
    lines = body.decode().splitlines()
    catalog = load_directory(DATA / "crafted", use_cache=False)
    objects = len(catalog.packages) + len(catalog.channels) + len(catalog.bundles)
    assert len(lines) == objects + len(catalog.deprecations) + len(catalog.others)
    for line in lines:
        obj = json.loads(line)
        assert line == json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # Numbers are written as Go writes a float64, HTML characters are not escaped.
    assert '"big":1e+22' in body.decode()
    assert '"note":"a<b & c>d"' in body.decode()


def test_http_semantics(pivoter_server: Callable[..., PivoterServer]) -> None:
    server = pivoter_server(DATA / "community-v4.20")
    url = server.base_url + "/api/v1/all"
    status, headers, plain = _get(url)
    assert status == 200

    status, headers, body = _get(url, **{"Accept-Encoding": "gzip"})
    assert headers.get("Content-Encoding") == "gzip"
    assert gzip.decompress(body) == plain

    status, headers, body = _get(url, method="HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == len(plain)

    status, _, _ = _get(url, **{"If-Modified-Since": headers["Last-Modified"]})
    assert status == 304
    status, _, _ = _get(url, **{"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert status == 200
    status, _, _ = _get(url, **{"If-Unmodified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert status == 412

    assert _get(url, method="POST")[0] == 405
    assert _get(url, method="DELETE")[0] == 405
    bad_name = url.replace("/community-v4.20/", "/Not_A_Name/")
    status, _, body = _get(bad_name)
    assert status == 400
    assert body.startswith(b"invalid catalog name")
    assert _get(url.replace("/community-v4.20/", "/other/"))[0] == 404
    assert _get(server.base_url + "/api/v1/metas?color=blue")[0] == 400


def test_metas_filters_like_catalogd(pivoter_server: Callable[..., PivoterServer]) -> None:
    server = pivoter_server(DATA / "crafted")
    source = CatalogdSource(server.base_url)
    assert {m["name"] for m in source.metas(schema="olm.package")} == {"etcd", "prometheus"}
    # File order, as catalogd's index returns them.
    channels = [m["name"] for m in source.metas(schema="olm.channel", package="etcd")]
    assert channels == ["stable", "alpha"]
    # The olm.package object has no "package" key, so ?package= does not return it (catalogd).
    assert all(m["schema"] != "olm.package" for m in source.metas(package="etcd"))
    assert source.metas(schema="olm.bundle", name="etcd.v0.9.2")[0]["image"].endswith("v0.9.2")
    _, _, everything = _get(server.base_url + "/api/v1/all")
    _, _, unfiltered = _get(server.base_url + "/api/v1/metas")
    assert unfiltered == everything


@pytest.mark.parametrize("name", ["crafted", "community-v4.16", "certified-v4.20"])
def test_client_reads_our_server_as_the_directory(
    name: str, pivoter_server: Callable[..., PivoterServer]
) -> None:
    server = pivoter_server(DATA / name)
    source = open_source(server.base_url)
    fetched = source.fetch()
    expected = load_directory(DATA / name, use_cache=False)
    # The JSONL carries whole objects: the model is the same apart from where objects came from.
    for kind in ("packages", "channels", "bundles", "deprecations"):
        strip = [_without_origin(o) for o in getattr(fetched, kind)]
        assert strip == [_without_origin(o) for o in getattr(expected, kind)], kind
    assert [(m.schema, m.package, m.name) for m in fetched.others] == [
        (m.schema, m.package, m.name) for m in expected.others
    ]
    first = source.digest
    again = source.fetch()  # 304: the cached catalog comes back
    assert again is fetched
    assert source.digest == first


def _without_origin(obj: object) -> object:
    import dataclasses

    return dataclasses.replace(obj, origin=None)  # type: ignore[type-var]


class _Misbehaving(BaseHTTPRequestHandler):
    mode = "garbage"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        body = (DATA / "test-catalog" / "expected_all.json").read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/jsonl")
        if self.mode == "garbage":
            data = b'{"schema":"olm.package","name":"x"}\nthis is not json\n'
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.mode == "drop":
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        elif self.mode == "drop-gzip":
            data = gzip.compress(body * 50)
            self.send_header("Content-Encoding", "gzip")
            self.end_headers()  # no length: the end of the connection ends the body
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif self.mode == "stall":
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:10])
            self.wfile.flush()
            time.sleep(8)
        elif self.mode == "huge":
            self.end_headers()
            try:
                for _ in range(10_000):
                    self.wfile.write(b'{"schema":"olm.package","name":"x"}\n' * 1000)
            except OSError:
                pass
            self.close_connection = True


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("garbage", "line 2 is not JSON"),
        ("drop", "dropped mid-stream"),
        ("drop-gzip", "dropped mid-stream"),
        ("stall", "stalled"),
        ("huge", "larger than 1000000 bytes"),
    ],
)
def test_misbehaving_server_is_a_clear_bounded_error(mode: str, expected: str) -> None:
    handler = type("Handler", (_Misbehaving,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    run_in_thread(server.serve_forever)
    base = f"http://127.0.0.1:{server.server_address[1]}/catalogs/test"
    try:
        started = time.monotonic()
        with pytest.raises(CatalogSourceError) as err:
            CatalogdSource(base, timeout=1.5, max_bytes=1_000_000).fetch()
        assert expected in str(err.value)
        assert base in str(err.value)
        assert time.monotonic() - started < 7
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_server_names_the_source() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CatalogSourceError) as err:
        CatalogdSource(f"http://127.0.0.1:{port}/catalogs/x", timeout=2).fetch()
    assert f"127.0.0.1:{port}" in str(err.value)
    assert "cannot connect" in str(err.value)
