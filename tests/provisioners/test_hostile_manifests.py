"""Hostile manifests in bundles of every format: refused with a FormatError naming the file, never
a crash of the process that unpacks them (libyaml's composer used to recurse on the C stack)."""

from __future__ import annotations

import base64
import gzip
import http.server
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from provisioners.content import unpack_bundle
from provisioners.formats import FormatError, format_for
from provisioners.formats.base import InvalidConfigError, InvalidManifestError
from provisioners.formats.helm import HelmFormat
from provisioners.formats.helm.values import values_for
from provisioners.formats.registry_v1.config import parse_duration
from provisioners.sources import FetchOptions, HttpSpec
from provisioners.store import BundleStore
from provisioners.unpack import unpack_tar
from tests.provisioners.oci import file, tar_bytes
from tests.provisioners.servers import serve_http

DEEP = 100_000
LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10)
)
HOSTILE = {
    "flow": "[" * DEEP + "]" * DEEP,
    "flow-map": "{a: " * DEEP,
    "block": "".join("  " * i + "-\n" for i in range(3000)),
    "dashes": "- " * DEEP + "x\n",
    "indent": "".join(" " * i + "a:\n" for i in range(3000)),
    "json": '{"apiVersion": "v1", "d": ' + "[" * DEEP + "]" * DEEP + "}",
    "laughs": LAUGHS,
    "recursive": "a: &a [*a]\n",
    "binary": "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata: !!binary aGk=\n",
    "set": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: !!set {a}\n",
    "python": "apiVersion: v1\nkind: X\nmetadata: !!python/object/apply:os.system [id]\n",
    "big-int": "apiVersion: v1\nkind: X\nmetadata: {name: x}\nn: " + "1" * 10_000 + "\n",
    "nan": "apiVersion: v1\nkind: X\nmetadata: {name: x}\nn: .nan\n",
}
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {k: v}\n"


def _deep_tarball() -> bytes:
    return gzip.compress(tar_bytes([file("manifests/deep.yaml", "[" * DEEP)]), 9)


def test_the_tiny_deep_tarball_is_tiny() -> None:
    assert len(_deep_tarball()) < 600


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_plain_bundles_refuse_hostile_manifests(tmp_path: Path, name: str) -> None:
    tarball = gzip.compress(
        tar_bytes([file("manifests/a.yaml", CONFIGMAP), file("manifests/bad.yaml", HOSTILE[name])])
    )
    unpack_tar(io.BytesIO(tarball), tmp_path)
    with pytest.raises(InvalidManifestError) as caught:
        format_for("plain+v0").convert(tmp_path)
    assert "bad.yaml" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["flow", "dashes", "laughs", "recursive", "binary", "big-int"])
@pytest.mark.parametrize("where", ["annotations", "csv"])
def test_registry_v1_bundles_refuse_hostile_manifests(
    tmp_path: Path, name: str, where: str
) -> None:
    annotations = (
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n"
        "  operators.operatorframework.io.bundle.manifests.v1: manifests/\n"
        "  operators.operatorframework.io.bundle.metadata.v1: metadata/\n"
        "  operators.operatorframework.io.bundle.package.v1: demo\n"
        "  operators.operatorframework.io.bundle.channels.v1: stable\n"
    )
    files = {
        "metadata/annotations.yaml": HOSTILE[name] if where == "annotations" else annotations,
        "manifests/csv.yaml": HOSTILE[name] if where == "csv" else CONFIGMAP,
    }
    for relpath, text in files.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    with pytest.raises(FormatError):
        format_for("registry+v1").convert(tmp_path)


@pytest.mark.parametrize("name", ["flow", "dashes", "laughs", "recursive", "python"])
def test_helm_chart_metadata_and_values_refuse_hostile_yaml(tmp_path: Path, name: str) -> None:
    (tmp_path / "Chart.yaml").write_text(HOSTILE[name])
    with pytest.raises(FormatError):
        HelmFormat().convert(tmp_path)
    with pytest.raises(InvalidConfigError):
        values_for({"values": HOSTILE[name]}, "default")
    secret = {"data": {"values.yaml": base64.b64encode(HOSTILE[name].encode()).decode()}}
    with pytest.raises(InvalidConfigError):
        values_for({"valuesFrom": [{"kind": "Secret", "name": "v"}]}, "default", lambda *_: secret)


def test_the_deep_tarball_through_the_http_source_and_store(tmp_path: Path) -> None:
    body = _deep_tarball()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    store = BundleStore(tmp_path / "store")
    with serve_http(Handler) as base, pytest.raises(InvalidManifestError, match="nested"):
        unpack_bundle(
            HttpSpec(f"{base}/deep.tgz"),
            store,
            FetchOptions(timeout_seconds=5, deadline_seconds=30),
            bundle_format=format_for("plain+v0"),
        )
    assert not store.keys()


def test_the_deep_tarball_does_not_kill_a_fresh_process(tmp_path: Path) -> None:
    tarball = tmp_path / "deep.tgz"
    tarball.write_bytes(_deep_tarball())
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from provisioners.formats import format_for
        from provisioners.unpack import unpack_tar
        root = Path({str(tmp_path / "tree")!r})
        with open({str(tarball)!r}, "rb") as f:
            unpack_tar(f, root)
        try:
            format_for("plain+v0").convert(root)
        except Exception as exc:
            print(type(exc).__name__, exc)
            sys.exit(0)
        sys.exit(9)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.startswith("InvalidManifestError")
    assert "nested" in result.stdout


@pytest.mark.parametrize("duration", ["9" * 5000 + "h", "1" + "0" * 10 + "m", "\uff11h"])
def test_registry_v1_durations_with_huge_numbers_are_config_errors(duration: str) -> None:
    with pytest.raises(InvalidConfigError, match="is not a duration"):
        parse_duration(duration, "certificates.validity")
