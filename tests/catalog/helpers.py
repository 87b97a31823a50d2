"""Helpers for the catalog tests: run the real opm, write catalogs, load + validate in one call."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.validate import validate
from tests.tools import tool

DATA = Path(__file__).resolve().parents[1] / "data" / "catalogs"
CATALOGS = (
    "community-operators-prod-v4.20",
    "certified-operators-v4.20",
    "community-operators-prod-v4.16",
    "community-operators-prod-derived",
    "operator-registry-testdata",
    "catalogd-testdata",
)


@dataclass(frozen=True)
class Verdict:
    """What one validator said about a catalog: passed, and its messages (with categories)."""

    passed: bool
    messages: tuple[str, ...]
    categories: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """All messages in one string (for keyword checks)."""
        return "\n".join(self.messages)


def opm_validate(directory: Path) -> Verdict:
    """Run ``opm validate -o json DIR`` and return its verdict."""
    result = subprocess.run(
        [str(tool("opm")), "validate", "-o", "json", str(directory)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        # opm prints plain errors (not JSON) for failures before validation starts.
        return Verdict(False, (result.stderr or result.stdout,))
    assert data["passed"] == (result.returncode == 0), result
    message = (data.get("error") or {}).get("message", "")
    return Verdict(bool(data["passed"]), (message,) if message else ())


def our_validate(directory: Path, **kwargs: Any) -> Verdict:
    """Load and validate ``directory`` with pivoter and return the verdict."""
    try:
        catalog = load_directory(directory, **kwargs)
    except CatalogLoadError as err:
        return Verdict(False, tuple(str(p) for p in err.problems), ("load",) * len(err.problems))
    findings = validate(catalog)
    return Verdict(
        not findings, tuple(str(f) for f in findings), tuple(f.category for f in findings)
    )


def opm_render(directory: Path) -> bytes:
    """Return ``opm render DIR -o json`` output."""
    result = subprocess.run(
        [str(tool("opm")), "render", "-o", "json", str(directory)],
        capture_output=True,
        timeout=600,
        check=True,
    )
    return result.stdout


def split_json_stream(data: bytes) -> list[Any]:
    """Decode a stream of concatenated JSON values."""
    decoder = json.JSONDecoder()
    text = data.decode()
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        obj, pos = decoder.raw_decode(text, pos)
        out.append(obj)


def read_docs(path: Path) -> list[dict[str, Any]]:
    """Read every object of a YAML catalog file."""
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def write_catalog(
    directory: Path, objects: Iterable[dict[str, Any]], *, as_json: bool = False
) -> Path:
    """Write ``objects`` as one catalog file under ``directory`` and return the file."""
    directory.mkdir(parents=True, exist_ok=True)
    if as_json:
        path = directory / "catalog.json"
        path.write_text("".join(json.dumps(o, indent=4) + "\n" for o in objects))
    else:
        path = directory / "catalog.yaml"
        path.write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
    return path
