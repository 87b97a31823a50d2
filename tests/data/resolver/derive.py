"""Re-derive the small test catalogs here from the shared ones (run from the repository root).

Keeps every object and every property the resolver reads; drops package icons and shrinks
``olm.csv.metadata`` to ``minKubeVersion`` so the copies stay commit-sized. Sources:
/work/shared/catalogs (see its SOURCES.md; Apache-2.0).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

PACKAGES = {
    "community": (
        "community-operators-prod-v4.20",
        ["rabbitmq-cluster-operator", "rabbitmq-messaging-topology-operator"],
    ),
    "certified": (
        "certified-operators-v4.20",
        ["pg4k-pgd", "alloydb-omni-operator-certified"],
    ),
}


def slim(doc: dict) -> dict:
    """Drop what resolution never reads."""
    doc = dict(doc)
    doc.pop("icon", None)
    doc.pop("description", None)
    props = []
    for prop in doc.get("properties", []) or []:
        if prop.get("type") == "olm.csv.metadata":
            value = prop.get("value") or {}
            kept = {k: value[k] for k in ("minKubeVersion",) if k in value}
            props.append({"type": prop["type"], "value": kept})
        else:
            props.append(prop)
    if "properties" in doc:
        doc["properties"] = props
    return doc


def main(shared: Path, out: Path) -> None:
    """Write ``out/<catalog>/<package>/catalog.yaml`` for every package listed above."""
    for name, (source, packages) in PACKAGES.items():
        for package in packages:
            text = (shared / source / package / "catalog.yaml").read_text()
            docs = [slim(d) for d in yaml.safe_load_all(text) if d]
            target = out / name / package / "catalog.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump_all(docs, sort_keys=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
