"""Builds the catalogs the channeltest tests run on: the hand-made good catalog and broken
catalogs derived from it by one edit each (so each test names the defect it plants)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "channeltest"
GOOD = DATA / "good"

Docs = list[dict[str, Any]]


def good_docs() -> Docs:
    """The objects of the good catalog, freshly parsed (safe to mutate)."""
    with open(GOOD / "catalog.yaml", encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def find(docs: Docs, schema: str, name: str, package: str = "demo") -> dict[str, Any]:
    """The object of ``schema`` called ``name`` (channels and bundles of ``package``)."""
    for d in docs:
        if d["schema"] != schema or d["name"] != name:
            continue
        if schema == "olm.package" or d.get("package") == package:
            return d
    raise KeyError((schema, name))


def entry(docs: Docs, channel: str, name: str, package: str = "demo") -> dict[str, Any]:
    """The entry ``name`` of ``channel``."""
    ch = find(docs, "olm.channel", channel, package)
    return next(e for e in ch["entries"] if e["name"] == name)


def bundle(package: str, version: str, *props: dict[str, Any]) -> dict[str, Any]:
    """A bundle object of ``package`` at ``version`` with extra properties."""
    return {
        "schema": "olm.bundle",
        "package": package,
        "name": f"{package}.v{version}",
        "image": f"quay.io/example/{package}-bundle:{version}",
        "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": version}},
            *props,
        ],
    }


def write(directory: Path, docs: Docs) -> Path:
    """Write ``docs`` as one YAML catalog file in ``directory``; return the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "catalog.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
    return directory


def derive(tmp: Path, edit: Callable[[Docs], None], name: str = "derived") -> Path:
    """Write the good catalog changed by ``edit`` under ``tmp``; return its directory."""
    docs = good_docs()
    edit(docs)
    return write(tmp / name, docs)


def load(path: Path) -> Catalog:
    """Load a catalog directory without touching the user's parse cache."""
    return load_directory(path, use_cache=False)
