"""Commands print whatever a catalog holds, whatever the encoding of their standard streams.

A catalog is anyone's text; a stdout whose encoding cannot hold a letter of it (``PYTHONIOENCODING
=ascii``, a C locale without Python's UTF-8 mode, as some CI runners have) made ``print`` raise
``UnicodeEncodeError`` (exit 70, a traceback). :func:`pivoter.cli.output.escape_what_cannot_be_
encoded` makes every command escape such characters instead; documents that declare UTF-8 (JUnit)
are written as UTF-8 bytes. These run real ``pivoter`` processes: the streams' encoding is chosen
when Python starts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.clirun import pivoter

NAME = "café"


def _package(name: str, bundle: str) -> list[dict[str, object]]:
    return [
        {
            "schema": "olm.package",
            "name": name,
            "defaultChannel": "stäble",
            "description": "☕ 東京",
        },
        {"schema": "olm.channel", "package": name, "name": "stäble", "entries": [{"name": bundle}]},
        {
            "schema": "olm.bundle",
            "package": name,
            "name": bundle,
            "image": "example.com/c:1",
            "properties": [
                {"type": "olm.package", "value": {"packageName": name, "version": "1.0.0"}}
            ],
        },
    ]


OBJECTS = [*_package(NAME, "cafe.v1"), *_package("c", "c.v1")]

ENVIRONMENTS = {
    "PYTHONIOENCODING=ascii": {"PYTHONIOENCODING": "ascii"},
    "LC_ALL=C without UTF-8 mode": {"LC_ALL": "C", "PYTHONUTF8": "0"},
}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("encoding") / "catalog"
    directory.mkdir()
    text = yaml.safe_dump_all(OBJECTS, allow_unicode=True, sort_keys=False)
    (directory / "catalog.yaml").write_text(text, encoding="utf-8")
    return directory


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.pop("LANG", None)
    env.pop("PYTHONUTF8", None)
    return {**env, **extra}


@pytest.mark.parametrize("extra", ENVIRONMENTS.values(), ids=ENVIRONMENTS.keys())
@pytest.mark.parametrize(
    ("command", "code", "expected"),
    [
        (["catalog", "validate"], 3, "invalid package name 'caf\\xe9'"),
        (["resolve", "--package", "c", "--catalog"], 0, "c        1.0.0    st\\xe4ble"),
        (["catalog", "test", "-o", "github"], 3, "title=validation.package-name (caf\\xe9)"),
    ],
    ids=["validate", "resolve", "test-github"],
)
def test_catalog_text_is_escaped_where_stdout_cannot_encode_it(
    catalog: Path, extra: dict[str, str], command: list[str], code: int, expected: str
) -> None:
    result = pivoter(*command, str(catalog), env=_environment(extra), fresh=True)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert expected in result.stdout


def test_a_utf8_argument_the_locale_cannot_read_is_one_line(catalog: Path) -> None:
    env = _environment(ENVIRONMENTS["LC_ALL=C without UTF-8 mode"])
    result = pivoter("resolve", "--package", NAME, "--catalog", str(catalog), env=env, fresh=True)
    assert result.returncode == 2
    assert result.stderr == (
        "pivoter: error: argument 'caf\\xe9' cannot be read in this locale's encoding (ascii): "
        "use a UTF-8 locale or PYTHONUTF8=1\n"
    )


def test_junit_is_written_as_the_utf8_it_declares(catalog: Path) -> None:
    env = _environment(ENVIRONMENTS["PYTHONIOENCODING=ascii"])
    result = pivoter("catalog", "test", "-o", "junit", str(catalog), env=env, fresh=True)
    assert result.returncode == 3, result.stderr
    # The test reads stdout with its own locale's codec (UTF-8 here): the name arrives whole.
    assert '<?xml version="1.0" encoding="UTF-8"?>' in result.stdout
    assert f'classname="{NAME}"' in result.stdout
