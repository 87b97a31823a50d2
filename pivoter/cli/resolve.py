"""``pivoter resolve``: pick bundles from catalogs and print the ResolveSet.

Reads catalogs from directories (or http(s)/grpc sources), an optional installed ResolveSet,
resolves the requested packages under a profile (default: pivoter's, see docs/resolution.md) and
prints the ResolveSet; an unsatisfiable request exits 4 with its minimal explanation on stderr.
Its flags: :mod:`pivoter.cli.commands.resolve`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from pivoter.cli.catalog_render import REMOTE, STALL_SECONDS
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit, error
from resolver import profiles, resolveset
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.sources import SourceError, open_source
from resolver.rules.inputs import (
    CatalogSource,
    PackageRequest,
    ResolutionError,
    ResolutionInput,
    Unsatisfiable,
)
from resolver.versions import RangeSyntaxError, parse_range, parse_version


class _Invalid(Exception):
    """Bad command-line input (exit 3)."""


def _catalog(spec: str) -> tuple[str, int, str]:
    """Split ``SOURCE[,priority=N][,name=NAME]``."""
    source, *options = spec.split(",")
    priority, name = 0, ""
    for opt in options:
        key, _, value = opt.partition("=")
        if key == "priority":
            try:
                priority = int(value)
            except ValueError:
                raise _Invalid(f"--catalog {spec}: priority must be an integer") from None
        elif key == "name":
            name = value
        else:
            raise _Invalid(f"--catalog {spec}: unknown option {key!r}")
    return source, priority, name


def _request(spec: str, channel: str, policy: str) -> PackageRequest:
    name, _, rng = spec.partition("@")
    if not name:
        raise _Invalid(f"--package {spec}: empty package name")
    if rng:
        try:
            parse_range(rng, "masterminds")
        except RangeSyntaxError as err:
            raise _Invalid(f"--package {spec}: {err}") from None
    return PackageRequest(
        package=name,
        channels=(channel,) if channel else (),
        version_range=rng,
        upgrade_policy=policy,
    )


def _human(doc: dict[str, Any]) -> str:
    keys = ("package", "version", "channel", "catalog", "bundle")
    rows = [[k.upper() for k in keys]] + [[str(b[k]) for k in keys] for b in doc["bundles"]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(keys))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"selection {doc['metadata']['selectionHash']}")
    for package, notes in doc.get("whyNotNewer", {}).items():
        lines.append(f"why not newer ({package}):")
        lines += [f"  {n}" for n in notes] or ["  nothing newer in the channel"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter resolve``."""
    try:
        if not args.catalog:
            raise _Invalid("at least one --catalog is needed")
        if not args.package:
            raise _Invalid("at least one --package is needed")
        if args.kube_version:
            try:
                parse_version(args.kube_version)
            except ValueError as err:
                raise _Invalid(f"--kube-version: {err}") from None
        requests = [_request(p, args.channel, args.upgrade_policy) for p in args.package]
        installed = []
        if args.installed is not None:
            try:
                installed = resolveset.loads(Path(args.installed).read_text()).installed()
            except OSError as err:
                error(f"--installed: {err}")
                return int(ExitCode.FAILURE)
            except resolveset.ResolveSetError as err:
                raise _Invalid(f"--installed {args.installed}: {err}") from None
        sources = []
        provenance = []
        end = time.monotonic() + args.timeout  # one deadline for every remote catalog
        for spec in args.catalog:
            location, priority, name = _catalog(spec)
            options: dict[str, float] = {}
            if location.startswith(REMOTE):
                left = max(end - time.monotonic(), 0.001)
                options = {"deadline": left, "timeout": min(STALL_SECONDS, left)}
            source = open_source(location, **options)
            catalog = source.fetch()
            cname = name or catalog.name or location
            sources.append(CatalogSource(cname, catalog, priority=priority))
            provenance.append([cname, priority, source.digest or location])
    except _Invalid as err:
        error(str(err))
        return int(ExitCode.INVALID)
    except CatalogLoadError as err:
        error(f"catalog: {err}")
        return int(ExitCode.INVALID)
    except SourceError as err:
        error(str(err))
        # A directory that exists but does not load is bad input; anything else failed to read.
        bad_content = os.path.isdir(err.source.removeprefix("file://"))
        return int(ExitCode.INVALID if bad_content else ExitCode.FAILURE)
    inp = ResolutionInput(
        catalogs=sources,
        requests=requests,
        installed=installed,
        kube_version=args.kube_version,
        options={"explain": args.explain},
    )
    try:
        result = profiles.get(args.profile)(inp)
    except Unsatisfiable as err:
        sys.stderr.write("pivoter: unsatisfiable: the request cannot be met because:\n")
        sys.stderr.writelines(f"  - {line}\n" for line in err.summary)
        if args.explain:
            sys.stderr.write("minimal set of conflicting constraints:\n")
            sys.stderr.writelines(f"  - {line}\n" for line in err.lines)
        return int(ExitCode.UNSATISFIABLE)
    except ResolutionError as err:
        error(str(err))
        return int(ExitCode.INVALID)
    digest = resolveset.digest(
        [
            args.profile,
            args.kube_version,
            sorted(provenance),
            [[r.package, list(r.channels), r.version_range, r.upgrade_policy] for r in requests],
            sorted([i.package, i.name, i.version] for i in installed),
        ]
    )
    doc = resolveset.from_choices(
        result.choices, inputs_digest=digest, profile=args.profile, notes=result.why_not
    ).to_dict()
    emit(doc, args.output, _human)
    return int(ExitCode.OK)
