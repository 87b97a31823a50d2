"""Hostile catalogs through the real CLI: every command refuses what ``validate`` refuses, the same
way (one line, the documented exit code), never with a traceback or a signal; the parsed-catalog
cache writes whatever loads (what it reads: test_hostile_cache.py)."""

from __future__ import annotations

import base64
import http.server
import os
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from pivoter.cli.exitcodes import ExitCode
from tests.clirun import pivoter
from tests.polling import wait_for

BASE = """schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v1.0.0
---
schema: olm.bundle
package: foo
name: foo.v1.0.0
image: quay.io/foo/foo:v1.0.0
properties:
- type: olm.package
  value: {packageName: foo, version: 1.0.0}
"""
DEEP = 100_000
LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10)
)


def _object_property(manifest: str) -> str:
    data = base64.b64encode(manifest.encode()).decode()
    return f"- type: olm.bundle.object\n  value: {{data: {data}}}\n"


# name -> (file name, extra file text or None for a bundle property, words the error must hold)
CASES: dict[str, tuple[str, str, str]] = {
    "flow": ("x.yaml", "schema: x.custom\nname: d\nd: " + "[" * DEEP + "]" * DEEP, "nested"),
    "flow-map": ("x.yaml", "schema: x.custom\nname: d\nd: " + "{a: " * DEEP, "nested"),
    "block": (
        "x.yaml",
        "schema: x.custom\nname: d\nd:\n" + "".join(" " * i + "- \n" for i in range(3000)),
        "nested",
    ),
    "block-dashes": ("x.yaml", "schema: x.custom\nname: d\nd:\n" + "- " * DEEP + "x\n", "nested"),
    "indented-maps": (
        "x.yaml",
        "schema: x.custom\nname: d\nd:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(3000)),
        "nested",
    ),
    "json": ("x.json", '{"schema": "x.custom", "d": ' + "[" * DEEP + "]" * DEEP + "}", "nested"),
    "json-300": ("x.json", '{"schema": "x.custom", "d": ' + "[" * 300 + "]" * 300 + "}", "nested"),
    "json-1000-maps": (
        "x.json",
        '{"schema": "x.custom", "d": ' + '{"a": ' * 1000 + "1" + "}" * 1000 + "}",
        "nested",
    ),
    "laughs": ("x.yaml", "schema: x.custom\nname: l\n" + LAUGHS, "alias bomb"),
    "recursive-alias": ("x.yaml", "schema: x.custom\nname: r\nd: &a [*a]\n", "recursive alias"),
    "binary": ("x.yaml", "schema: x.custom\nname: b\nd: !!binary aGVsbG8=\n", "!!binary"),
    "set": ("x.yaml", "schema: x.custom\nname: s\nd: !!set {a, b}\n", "!!set"),
    "timestamp": (
        "x.yaml",
        "schema: x.custom\nname: t\nd: !!timestamp 2001-12-14\n",
        "!!timestamp",
    ),
    "python": (
        "x.yaml",
        "schema: x.custom\nname: p\nd: !!python/object/apply:os.system ['true']\n",
        "!!python",
    ),
    "surrogate-json": ("x.json", '{"schema": "x.custom", "d": "\\ud800"}', "surrogate"),
    "surrogate-yaml": ("x.yaml", 'schema: x.custom\nname: u\nd: "\\ud800"\n', "Unicode"),
    "int-10000": ("x.yaml", "schema: x.custom\nname: i\nd: " + "7" * 10_000 + "\n", "out of range"),
    "int-10000-json": (
        "x.json",
        '{"schema": "x.custom", "d": ' + "7" * 10_000 + "}",
        "out of range",
    ),
    "nan-yaml": ("x.yaml", "schema: x.custom\nname: n\nd: .nan\n", "NaN"),
    "nan-json": ("x.json", '{"schema": "x.custom", "d": NaN}\n{"schema": "x.custom"}', "JSON"),
    "null-key": ("x.yaml", "schema: x.custom\nname: k\nd: {~: 1}\n", "key is null"),
    "object-deep": ("", _object_property("[" * DEEP + "]" * DEEP), "nested"),
    "object-deep-yaml": ("", _object_property("- " * DEEP + "x\n"), "nested"),
    "object-laughs": ("", _object_property(LAUGHS), "alias bomb"),
    "object-binary": ("", _object_property("kind: A\nx: !!binary aGk=\n"), "!!binary"),
    "object-recursive": ("", _object_property("kind: A\nx: &a [*a]\n"), "recursive alias"),
    "object-big-int": ("", _object_property("kind: A\nx: " + "9" * 10_000), "out of range"),
}


def _hostile_catalog(root: Path) -> Path:
    """One catalog holding every case, each in its own file (validate reports every file)."""
    directory = root / "hostile"
    directory.mkdir()
    (directory / "catalog.yaml").write_text(BASE)
    for name, (filename, text, _) in CASES.items():
        if filename:
            suffix = filename.rsplit(".", 1)[1]
            (directory / f"{name}.{suffix}").write_text(text)
        else:  # a bundle of its own holding the hostile olm.bundle.object
            bundle = BASE.split("---\n")[2].replace("foo.v1.0.0", f"foo.v0.0.{len(text) % 97}")
            (directory / f"{name}.yaml").write_text(bundle + text)
    return directory


def _pivoter(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return pivoter(*args, env={**os.environ, "PIVOTER_CACHE": str(cache)}, timeout=120)


def _assert_clean(result: subprocess.CompletedProcess[str], code: int, words: str = "") -> None:
    assert result.returncode >= 0, f"killed by signal {-result.returncode}"
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == code, (
        result.returncode,
        result.stdout[-800:],
        result.stderr[-800:],
    )
    if words:
        assert words in result.stdout + result.stderr


def test_every_command_refuses_hostile_input_the_same_way(tmp_path: Path) -> None:
    directory = _hostile_catalog(tmp_path)
    cache = tmp_path / "cache"
    validate = _pivoter(cache, "catalog", "validate", str(directory))
    _assert_clean(validate, ExitCode.INVALID)
    reasons: dict[str, str] = {}
    for name, (_, _, words) in CASES.items():
        found = [line for line in validate.stdout.splitlines() if line.startswith(f"{name}.")]
        assert found, f"validate reported nothing for {name}"
        (finding,) = found
        assert words in finding, finding
        assert finding.split(":")[1].isdigit(), finding  # file:line:
        reasons[name] = finding.split(": error: ", 1)[1].removesuffix(" [load]")
    render = _pivoter(cache, "catalog", "render", str(directory))
    _assert_clean(render, ExitCode.INVALID)
    resolve = _pivoter(cache, "resolve", "--catalog", str(directory), "--package", "foo")
    _assert_clean(resolve, ExitCode.INVALID)
    test = _pivoter(cache, "catalog", "test", str(directory))
    _assert_clean(test, ExitCode.INVALID)
    for name, reason in reasons.items():
        for command in (render, resolve, test):
            assert reason in command.stdout + command.stderr, (name, reason, command.args)
    # diff compares what can be read and always exits 0 (docs/catalog-testing.md).
    good = tmp_path / "good"
    good.mkdir()
    (good / "catalog.yaml").write_text(BASE)
    _assert_clean(_pivoter(cache, "catalog", "diff", str(good), str(directory)), ExitCode.OK)
    _assert_clean(_pivoter(cache, "catalog", "diff", str(directory), str(good)), ExitCode.OK)


@pytest.mark.parametrize("name", ["flow", "json", "object-deep", "laughs", "binary", "int-10000"])
def test_one_hostile_file_alone(tmp_path: Path, name: str) -> None:
    directory = tmp_path / name
    directory.mkdir()
    filename, text, words = CASES[name]
    if filename:
        (directory / "catalog.yaml").write_text(BASE)
        (directory / filename).write_text(text)
    else:
        (directory / "catalog.yaml").write_text(BASE + text)
    cache = tmp_path / "cache"
    _assert_clean(_pivoter(cache, "catalog", "validate", str(directory)), ExitCode.INVALID, words)
    _assert_clean(_pivoter(cache, "catalog", "render", str(directory)), ExitCode.INVALID, words)
    resolve = _pivoter(cache, "resolve", "--catalog", str(directory), "--package", "foo")
    _assert_clean(resolve, ExitCode.INVALID, words)


def test_templates_and_expectations_refuse_hostile_yaml(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    template = tmp_path / "template.yaml"
    template.write_text("schema: olm.template.basic\nentries:\n" + "- " * DEEP + "x\n")
    result = _pivoter(cache, "catalog", "test", str(template))
    assert result.returncode > 0
    _assert_clean(result, result.returncode)
    good = tmp_path / "good"
    good.mkdir()
    (good / "catalog.yaml").write_text(BASE)
    steps = (
        "package: foo\nexpect:\n- max_path_length: {channel: stable, steps: '" + "9" * 5000 + "'}\n"
    )
    for text in ("[" * DEEP, LAUGHS, "expect: &a [*a]\n", "expect: !!binary aGk=\n", steps):
        expect = tmp_path / "expect.yaml"
        expect.write_text(text)
        result = _pivoter(cache, "catalog", "test", str(good), "--expect", str(expect))
        _assert_clean(result, ExitCode.USAGE)
        assert "not valid YAML" in result.stderr or "steps must be a whole number" in result.stderr


def test_resolveset_with_hostile_yaml_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    (good / "catalog.yaml").write_text(BASE)
    for text in ("[" * DEEP, LAUGHS, "a: &a [*a]\n", "a: " + "1" * 10_000):
        installed = tmp_path / "installed.yaml"
        installed.write_text(text)
        result = _pivoter(
            tmp_path / "cache",
            "resolve",
            "--catalog",
            str(good),
            "--package",
            "foo",
            "--installed",
            str(installed),
        )
        assert result.returncode > 0
        _assert_clean(result, result.returncode)


def test_the_deepest_accepted_value_renders_caches_and_reloads(tmp_path: Path) -> None:
    directory = tmp_path / "cat"
    directory.mkdir()
    deep = "[" * 199 + "1" + "]" * 199
    (directory / "catalog.yaml").write_text(BASE)
    (directory / "deep.yaml").write_text(f"schema: x.custom\nname: deep\nd: {deep}\n")
    (directory / "deep.json").write_text('{"schema": "x.other", "d": ' + deep + "}\n")
    cache = tmp_path / "cache"
    first = _pivoter(cache, "catalog", "render", str(directory))
    _assert_clean(first, ExitCode.OK)
    assert list((cache / "catalogs").glob("*.cache"))
    again = _pivoter(cache, "catalog", "render", str(directory))  # from the cache
    _assert_clean(again, ExitCode.OK)
    assert again.stdout == first.stdout
    _assert_clean(_pivoter(cache, "catalog", "validate", str(directory)), ExitCode.OK)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", "1.0." + "9" * 5000),
        ("version", "1.0.0-" + "9" * 5000),
        ("version", "18446744073709551616.0.0"),
        ("skipRange", ">=1." + "9" * 5000 + ".0 <2.0.0"),
        ("skipRange", "1." + "9" * 5000 + ".x"),
    ],
)
def test_version_numbers_past_uint64_are_findings_not_crashes(
    tmp_path: Path, field: str, value: str
) -> None:
    directory = tmp_path / "cat"
    directory.mkdir()
    text = BASE.replace("version: 1.0.0}", f'version: "{value}"}}')
    if field == "skipRange":
        text = BASE.replace("- name: foo.v1.0.0\n", f'- name: foo.v1.0.0\n  skipRange: "{value}"\n')
    (directory / "catalog.yaml").write_text(text)
    cache = tmp_path / "cache"
    validate = _pivoter(cache, "catalog", "validate", str(directory))
    _assert_clean(validate, ExitCode.INVALID, "above 2^64-1")
    for args in (
        ("catalog", "render", str(directory)),
        ("catalog", "test", str(directory)),
        ("catalog", "graph", str(directory), "--package", "foo", "-o", "dot"),
        ("resolve", "--catalog", str(directory), "--package", "foo"),
        ("resolve", "--catalog", str(directory), "--package", "foo@>=" + "9" * 5000),
    ):
        result = _pivoter(cache, *args)
        _assert_clean(result, result.returncode)


JSONL_LINES = {
    "deep": '{"schema": "x.custom", "d": ' + "[" * DEEP + "]" * DEEP + "}",
    "deep-300": '{"schema": "x.custom", "d": ' + "[" * 300 + "]" * 300 + "}",
    "nan": '{"schema": "x.custom", "d": NaN}',
    "surrogate": '{"schema": "x.custom", "d": "\\ud800"}',
    "big-int": '{"schema": "x.custom", "d": ' + "1" * 10_000 + "}",
    "deep-object": (
        '{"schema": "olm.bundle", "package": "foo", "name": "foo.v2", "properties": [{"type": '
        '"olm.bundle.object", "value": {"data": "'
        + base64.b64encode(b"[" * DEEP).decode()
        + '"}}]}'
    ),
}


@pytest.mark.parametrize("name", sorted(JSONL_LINES))
def test_catalogd_json_lines_are_refused_cleanly(tmp_path: Path, name: str) -> None:
    good = '{"schema": "olm.package", "name": "foo", "defaultChannel": "stable"}'
    body = (good + "\n" + JSONL_LINES[name] + "\n").encode()

    class Catalogd(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/jsonl")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Catalogd)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = _pivoter(tmp_path / "cache", "catalog", "render", url)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode in (ExitCode.FAILURE, ExitCode.INVALID)
    _assert_clean(result, result.returncode)
    assert "line 2" in result.stderr or "nested" in result.stderr, result.stderr


def test_a_live_serve_survives_hostile_files_on_reload(tmp_path: Path) -> None:
    directory = tmp_path / "live"
    directory.mkdir()
    (directory / "catalog.yaml").write_text(BASE)
    stderr = tmp_path / "serve.err"
    with stderr.open("wb") as err:
        serve = subprocess.Popen(
            [
                *(sys.executable, "-m", "pivoter.cli.main", "catalog", "serve", str(directory)),
                *("--grpc-port", "-1", "--http-port", "0", "--poll-interval", "0.2"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PIVOTER_CACHE": str(tmp_path / "cache")},
        )
    try:
        url = wait_for(
            lambda: re.search(r"(http://\S+/api/v1/all)", stderr.read_text()),
            timeout=30.0,
            interval=0.1,
            what="the server URL",
        )[1]
        (directory / "catalog.yaml").write_text(BASE + CASES["object-deep"][1])
        (directory / "flow.yaml").write_text(CASES["flow"][1])
        wait_for(
            lambda: "nested deeper than 200" in stderr.read_text(),
            timeout=30.0,
            interval=0.1,
            what="the reload error",
        )  # the reload failed
        assert serve.poll() is None, stderr.read_text()[-2000:]
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b'"name":"foo.v1.0.0"' in response.read()
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    text = stderr.read_text()
    assert "Traceback" not in text
    assert "nested" in text
