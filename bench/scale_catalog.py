"""Generate a catalog shaped like community-operators-prod-derived, N times its size.

The shape comes from the real catalog itself (its empirical distributions, not fitted ones):
copy ``c`` of every package (``c`` = 0 .. N-1) is the package with every identifier renamed
consistently within the copy, so each copy keeps the real channels, entries per channel,
``replaces``/``skips``/``skipRange`` edges, property mix (``olm.gvk``, ``olm.gvk.required``,
``olm.package.required``, ``olm.constraint``, ``olm.csv.metadata``), related images, icons and
deprecations, and its dependencies point at providers of the same copy:

* package ``P`` -> ``P-sC`` (copy 0 keeps the real names, so 1x is the real catalog);
* bundle and entry names (``name``, ``replaces``, ``skips``, deprecation references) -> ``...-sC``;
* API groups of ``olm.gvk`` and ``olm.gvk.required`` (and inside ``olm.constraint``) ->
  ``sC.<group>``, so copies do not all provide the same APIs;
* package names in ``olm.package.required`` and constraints -> the copy's;
* bundle images -> ``<repository>-sC:<tag>``.

The real catalog is invalid as shipped in four ways, repaired the same in every copy (and
counted): package icons whose base64 does not decode are dropped, ``oci://`` related images lose
the scheme, a related image ending in ``@`` (no digest) loses the ``@``, and skipRanges written
``<v1.2.3`` lose the ``v`` (what the bundles' authors meant).
Versions are unchanged, so skipRanges keep matching what they matched.

Run: ``python bench/scale_catalog.py --factor 10 OUT`` (reads ../shared/catalogs). Used by
``bench/scale.py``. Writes ``OUT/<package>/catalog.json`` (pretty-printed JSON streams, as the
real catalog).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS, need

ROOT = Path(__file__).resolve().parents[1]
SOURCE = CATALOGS / "community-operators-prod-derived"

_V_RANGE = re.compile(r"([<>=!~^]+)\s*v(?=[0-9])")


def read_stream(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of one catalog file (a stream of JSON values)."""
    text = path.read_text()
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        obj, pos = decoder.raw_decode(text, pos)
        yield obj


def repair(obj: dict[str, Any], counts: Counter[str]) -> dict[str, Any]:
    """Repair the real catalog's three invalid kinds of value (see the module docstring)."""
    if obj.get("schema") == "olm.package" and isinstance(obj.get("icon"), dict):
        try:
            base64.b64decode(obj["icon"].get("base64data", ""), validate=True)
        except binascii.Error:
            del obj["icon"]
            counts["icons dropped"] += 1
    for related in obj.get("relatedImages") or []:
        image = related.get("image", "")
        if image.startswith("oci://"):
            related["image"] = image = image.removeprefix("oci://")
            counts["oci:// related images"] += 1
        if image.endswith("@"):  # a digest left out
            related["image"] = image.removesuffix("@")
            counts["related images ending in @"] += 1
    for entry in obj.get("entries") or []:
        skip_range = entry.get("skipRange")
        if isinstance(skip_range, str) and _V_RANGE.search(skip_range):
            entry["skipRange"] = _V_RANGE.sub(r"\1", skip_range)
            counts["skipRanges with v"] += 1
    return obj


class Copy:
    """Renames the identifiers of one copy."""

    def __init__(self, index: int) -> None:
        self.index = index

    def name(self, value: str) -> str:
        return value if self.index == 0 else f"{value}-s{self.index}"

    def group(self, value: str) -> str:
        if self.index == 0 or not value:
            return value
        return f"s{self.index}.{value}"

    def image(self, value: str) -> str:
        if self.index == 0 or not value:
            return value
        repository, sep, tag = value.rpartition(":")
        if not sep or "/" in tag:  # no tag (a registry port is not a tag)
            return f"{value}-s{self.index}"
        return f"{repository}-s{self.index}:{tag}"

    def constraint(self, value: Any) -> Any:
        """Rename inside an ``olm.constraint`` value (``gvk``, ``package``, ``all``/``any``...)."""
        if isinstance(value, list):
            return [self.constraint(v) for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "group" and isinstance(item, str):
                out[key] = self.group(item)
            elif key == "packageName" and isinstance(item, str):
                out[key] = self.name(item)
            else:
                out[key] = self.constraint(item)
        return out

    def property(self, prop: dict[str, Any]) -> dict[str, Any]:
        kind, value = prop.get("type"), prop.get("value")
        if kind == "olm.package" and isinstance(value, dict):
            value = {**value, "packageName": self.name(value["packageName"])}
        elif kind in ("olm.gvk", "olm.gvk.required") and isinstance(value, dict):
            value = {**value, "group": self.group(value.get("group", ""))}
        elif kind == "olm.package.required" and isinstance(value, dict):
            value = {**value, "packageName": self.name(value["packageName"])}
        elif kind == "olm.constraint":
            value = self.constraint(value)
        return {**prop, "value": value}

    def object(self, obj: dict[str, Any]) -> dict[str, Any]:
        out = dict(obj)
        schema = obj.get("schema")
        if schema == "olm.package":
            out["name"] = self.name(obj["name"])
        elif schema == "olm.channel":
            out["package"] = self.name(obj["package"])
            out["entries"] = [self.entry(e) for e in obj.get("entries") or []]
        elif schema == "olm.bundle":
            out["package"] = self.name(obj["package"])
            out["name"] = self.name(obj["name"])
            out["image"] = self.image(obj.get("image", ""))
            out["properties"] = [self.property(p) for p in obj.get("properties") or []]
        elif schema == "olm.deprecations":
            out["package"] = self.name(obj["package"])
            out["entries"] = [self.deprecation(e) for e in obj.get("entries") or []]
        return out

    def entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        out = dict(entry)
        out["name"] = self.name(entry["name"])
        if "replaces" in entry:
            out["replaces"] = self.name(entry["replaces"])
        if "skips" in entry:
            out["skips"] = [self.name(s) for s in entry["skips"]]
        return out

    def deprecation(self, entry: dict[str, Any]) -> dict[str, Any]:
        reference = dict(entry.get("reference") or {})
        if reference.get("schema") == "olm.bundle" and "name" in reference:
            reference["name"] = self.name(reference["name"])
        return {**entry, "reference": reference}


def generate(out: Path, factor: int, source: Path = SOURCE) -> Counter[str]:
    """Write the catalog ``factor`` times the size of ``source`` under ``out``; return counts."""
    counts: Counter[str] = Counter()
    packages = {p.parent.name: [repair(o, counts) for o in read_stream(p)] for p in _files(source)}
    for index in range(factor):
        copy = Copy(index)
        for name, objects in packages.items():
            directory = out / copy.name(name)
            directory.mkdir(parents=True, exist_ok=True)
            renamed = [copy.object(o) for o in objects]
            for obj in renamed:
                counts[obj.get("schema", "?")] += 1
            text = "".join(json.dumps(o, indent=4) + "\n" for o in renamed)
            (directory / "catalog.json").write_text(text)
    return counts


def _files(source: Path) -> list[Path]:
    return sorted(source.glob("*/catalog.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    need(args.source)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"{args.out} is not empty", file=sys.stderr)
        return 1
    counts = generate(args.out, args.factor, args.source)
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
