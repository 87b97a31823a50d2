"""``pivoter resolve``: its flags; the command is :mod:`pivoter.cli.resolve`."""

from __future__ import annotations

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import CatalogSpec, Name, PackageSpec, Seconds, TextFile, VersionText

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
        default=60.0,
        help="seconds all remote catalogs together may take to fetch: connecting, every request, "
        "every byte (default 60)",
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
    set_handler(parser, "pivoter.cli.resolve:run")
