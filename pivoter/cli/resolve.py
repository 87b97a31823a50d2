"""``pivoter resolve``: pick bundles from catalogs and print the ResolveSet.

Reads catalogs from directories (or http(s)/grpc sources), an optional installed ResolveSet,
resolves the requested packages under a profile (default: pivoter's, see docs/resolution.md) and
prints the ResolveSet; an unsatisfiable request exits 4 with its minimal explanation on stderr.
The catalogs (:class:`~pivoter.cli.flags.CatalogSpec`), packages and ranges
(:class:`~pivoter.cli.flags.PackageSpec`) and ``--kube-version`` are checked while the command
line is parsed, so a malformed one exits 3 before any catalog is read; the resolver itself is
imported only when the command runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pivoter.cli.catalog_render import FETCH_TIMEOUT, STALL_SECONDS
from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import (
    CatalogSpec,
    Name,
    PackageChoice,
    PackageSpec,
    Seconds,
    TextFile,
    VersionText,
)
from pivoter.cli.output import emit, error

if TYPE_CHECKING:
    from resolver.rules.inputs import PackageRequest

__all__ = ["DEFAULT_PROFILE", "PROFILES", "register", "run"]

PROFILES = ("pivoter", "olm-v0", "olmv1-deppy", "olmv1-filter")
"""``resolver.profiles.NAMES``, written out so that the parser does not import the resolver
(``tests/unit/test_cli_imports.py`` checks that the two agree)."""

DEFAULT_PROFILE = "pivoter"
"""``resolver.profiles.DEFAULT`` (checked likewise)."""


def register(subparsers: Subparsers) -> None:
    """Add the ``resolve`` command."""
    parser = add_command(subparsers, "resolve", "resolve packages from catalogs into a ResolveSet")
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        type=CatalogSpec(),
        metavar="SOURCE[,priority=N][,name=NAME]",
        help="a catalog directory, http(s):// catalogd URL or grpc:// registry (repeatable)",
    )
    parser.add_argument(
        "--package",
        action="append",
        default=[],
        type=PackageSpec(),
        metavar="NAME[@RANGE]",
        help="a package to resolve, optionally with a version range such as ^1.2 (repeatable)",
    )
    parser.add_argument(
        "--channel",
        default="",
        type=Name("text", "channel", optional=True),
        help="channel for the requested packages",
    )
    parser.add_argument(
        "--upgrade-policy",
        choices=("CatalogProvided", "SelfCertified"),
        default="CatalogProvided",
        help="CatalogProvided follows catalog upgrade edges; SelfCertified allows any version",
    )
    parser.add_argument(
        "--installed",
        type=TextFile("--installed"),
        help="a ResolveSet describing what is installed",
    )
    parser.add_argument(
        "--timeout",
        type=Seconds(),
        default=FETCH_TIMEOUT,
        help="seconds all remote catalogs together may take to fetch: connecting, every request, "
        "every byte (default %(default)g)",
    )
    parser.add_argument("--profile", default=DEFAULT_PROFILE, choices=PROFILES)
    parser.add_argument(
        "--kube-version",
        default="",
        type=VersionText(optional=True, what="--kube-version", code=ExitCode.INVALID),
        help="exclude bundles needing a newer one",
    )
    parser.add_argument(
        "--explain", action="store_true", help="say why newer bundles were not chosen"
    )
    add_output_flag(parser)
    set_handler(parser, run)


class _Invalid(Exception):
    """Bad command-line input (exit 3)."""


def _request(choice: PackageChoice, channel: str, policy: str) -> PackageRequest:
    from resolver.rules.inputs import PackageRequest

    return PackageRequest(
        package=choice.name,
        channels=(channel,) if channel else (),
        version_range=choice.version_range,
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
    from resolver import profiles, resolveset
    from resolver.catalog.errors import CatalogLoadError
    from resolver.catalog.sources import CatalogSourceError, open_source
    from resolver.rules.inputs import (
        CatalogInput,
        ResolutionError,
        ResolutionInput,
        Unsatisfiable,
    )

    try:
        if not args.catalog:
            raise _Invalid("at least one --catalog is needed")
        if not args.package:
            raise _Invalid("at least one --package is needed")
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
        for choice in args.catalog:
            location = choice.location
            options: dict[str, float] = {}
            if location.remote:
                left = max(end - time.monotonic(), 0.001)
                options = {"deadline": left, "timeout": min(STALL_SECONDS, left)}
            try:
                source = open_source(location.text, **options)
                catalog = source.fetch()
            except CatalogSourceError as err:
                error(str(err))
                # A directory that exists but does not load is bad input; anything else failed
                # to read.
                bad_content = not location.remote and os.path.isdir(location.path)
                return int(ExitCode.INVALID if bad_content else ExitCode.FAILURE)
            cname = choice.name or catalog.name or location.text
            sources.append(CatalogInput(cname, catalog, priority=choice.priority))
            provenance.append([cname, choice.priority, source.digest or location.text])
    except _Invalid as err:
        error(str(err))
        return int(ExitCode.INVALID)
    except CatalogLoadError as err:
        error(f"catalog: {err}")
        return int(ExitCode.INVALID)
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
            # The message as the profile's upstream words it (what a conformance case expects).
            separator = profiles.SEPARATORS.get(args.profile, ", ")
            sys.stderr.write(f"in one line: {err.text(separator)}\n")
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
