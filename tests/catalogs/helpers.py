"""Catalog content for the catalog controller tests: a real small catalog from tests/data and
edits of it (a new package, a broken channel)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "tests" / "data" / "wire" / "registry-latest"
"""operator-registry's test catalog: 3 packages, 10 bundles."""
BASE_PACKAGES, BASE_BUNDLES = 3, 10


def extra_package(name: str = "extra", version: str = "1.0.0") -> str:
    """FBC YAML of one package with one bundle."""
    return f"""---
schema: olm.package
name: {name}
defaultChannel: stable
---
schema: olm.channel
name: stable
package: {name}
entries:
  - name: {name}.v{version}
---
schema: olm.bundle
name: {name}.v{version}
package: {name}
image: registry.example/{name}:{version}
properties:
  - type: olm.package
    value:
      packageName: {name}
      version: {version}
"""


BROKEN_CHANNEL = """---
schema: olm.channel
name: broken
package: extra
entries:
  - name: extra.v9.9.9
"""
"""A channel whose entry has no bundle: loads, but fails validation."""


def copy_base(dest: Path) -> Path:
    """A writable copy of the base catalog at ``dest``."""
    shutil.copytree(BASE, dest)
    return dest
