"""``catalog test --changed-since REF`` / ``--changed-files FILE``: what a change answers for.

A pull request to a catalog repository should be judged on what it touched, not on every old
defect of the catalog. :func:`scope_report` keeps, of the findings of the catalog now:

* every finding in a package *the change touched*: a package with an object (package, channel,
  bundle, deprecations) in a changed file, in the catalog now or in the catalog at the ref (so a
  deleted file counts for the packages it held); with a list of files and no ref, a deleted file
  counts for the packages of the other files of its directory;
* every finding *the change introduced* anywhere: present now, absent at the ref, compared by
  identity (:attr:`resolver.channeltest.findings.Finding.identity`: code, package, channel,
  bundle; never the message), e.g. an entry of another package stranded because a bundle it
  depended on was removed, or a dependency no catalog satisfies any more;
* a finding of no package (an unreadable file) when its file changed.

The channels and packages listed with the findings are narrowed the same way. Pure logic: the CLI
(:mod:`pivoter.cli.catalog_changes`) reads the catalog at the ref with git and lists the changed
files, relative to the catalog directory.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from resolver.catalog.model import Catalog, Origin
from resolver.channeltest.findings import Finding
from resolver.channeltest.report import Report


@dataclass(frozen=True, slots=True)
class ChangedFiles:
    """What changed: files relative to the catalog directory, and the ref compared with ("" when
    only a list of files was given)."""

    files: frozenset[str]
    since: str = ""


def _objects(catalog: Catalog) -> Iterable[tuple[str, Origin | None]]:
    for p in catalog.packages:
        yield p.name, p.origin
    for c in catalog.channels:
        yield c.package, c.origin
    for b in catalog.bundles:
        yield b.package, b.origin
    for d in catalog.deprecations:
        yield d.package, d.origin
    for m in catalog.others:
        if m.package:
            yield m.package, m.origin


def touched_packages(files: frozenset[str], catalogs: Sequence[Catalog]) -> set[str]:
    """Packages with an object in one of ``files`` in any of ``catalogs``; a file in none of
    them (deleted, with no catalog from before) counts for the packages of its directory."""
    by_file: dict[str, set[str]] = {}
    for catalog in catalogs:
        for package, origin in _objects(catalog):
            if origin is not None and package:
                by_file.setdefault(posixpath.normpath(origin.path), set()).add(package)
    by_dir: dict[str, set[str]] = {}
    for path, packages in by_file.items():
        by_dir.setdefault(posixpath.dirname(path), set()).update(packages)
    out: set[str] = set()
    for path in (posixpath.normpath(f) for f in files):
        if path in by_file:
            out |= by_file[path]
        elif posixpath.dirname(path):  # not the catalog root: that would be every package
            out |= by_dir.get(posixpath.dirname(path), set())
    return out


def _kept(
    f: Finding, packages: set[str], files: frozenset[str], before: set[object] | None
) -> bool:
    if f.package in packages:
        return True
    if before is not None and f.identity not in before:
        return True
    return not f.package and f.origin is not None and f.origin.path in files


def scope_report(
    now: Report,
    now_catalog: Catalog,
    change: ChangedFiles,
    before: Report | None = None,
    before_catalog: Catalog | None = None,
) -> Report:
    """``now`` narrowed to what ``change`` touched or introduced (see the module text).

    ``before``/``before_catalog`` are the report and catalog at the ref (None with a list of
    files only: then nothing counts as introduced, only touched packages are reported).
    """
    files = frozenset(posixpath.normpath(f) for f in change.files)
    catalogs = [now_catalog] + ([before_catalog] if before_catalog is not None else [])
    packages = touched_packages(files, catalogs)
    before_ids: set[object] | None = None
    if before is not None:
        before_ids = {f.identity for f in before.findings}
    kept = [f for f in now.findings if _kept(f, packages, files, before_ids)]
    shown = packages | {f.package for f in kept if f.package}
    introduced = sorted({f.package for f in kept if f.package and f.package not in packages})
    return Report(
        now.catalog,
        kept,
        [g for g in now.graphs if g.package in shown],
        {p: c for p, c in now.defaults.items() if p in shown},
        now.versions,
        changed={
            "since": change.since,
            "files": sorted(files),
            "packages": sorted(packages),
            "introduced_in": introduced,
        },
    )
