"""Shared helpers for the registry+v1 tests: the ten real bundles and ways to break copies.

The bundles are the copies in tests/data/bundles/registry-v1 (verbatim from ../shared, see the
README there), so that a plain clone runs these tests too."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

BUNDLES_ROOT = Path(__file__).resolve().parents[1] / "data" / "bundles" / "registry-v1"


def real_bundles() -> dict[str, Path]:
    """Package name -> bundle directory, for the ten real bundles."""
    return {
        package.name: version
        for package in sorted(BUNDLES_ROOT.iterdir())
        if package.is_dir()
        for version in sorted(package.iterdir())
        if (version / "manifests").is_dir()
    }


def bundle(name: str) -> Path:
    """The directory of one real bundle."""
    return real_bundles()[name]


def copy_bundle(name: str, dest: Path) -> Path:
    """A writable copy of a real bundle under ``dest``."""
    target = dest / name
    shutil.copytree(bundle(name), target)
    return target


def csv_path(root: Path) -> Path:
    """The CSV file of a bundle copy."""
    return next(root.glob("manifests/*clusterserviceversion*"))


def edit_yaml(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Load the single document in ``path``, let ``change`` mutate it, write it back."""
    document = yaml.safe_load(path.read_text())
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def edit_csv(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Mutate the CSV of a bundle copy."""
    edit_yaml(csv_path(root), change)


def load_csv(root: Path) -> dict[str, Any]:
    """The CSV document of a bundle, as the YAML says (for walking what it declares)."""
    document: dict[str, Any] = yaml.safe_load(csv_path(root).read_text())
    return document


def manifests(root: Path) -> list[dict[str, Any]]:
    """Every object in ``manifests/`` of a bundle."""
    objects: list[dict[str, Any]] = []
    for path in sorted((root / "manifests").iterdir()):
        objects.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return objects
