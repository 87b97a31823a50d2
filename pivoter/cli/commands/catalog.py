"""``pivoter catalog ...``: the flags of validate, serve, render, test, diff and graph.

What each subcommand does is :mod:`pivoter.cli.catalog_validate`, :mod:`pivoter.cli.catalog_serve`,
:mod:`pivoter.cli.catalog_render`, :mod:`pivoter.cli.catalog_test` (with ``--live``:
:mod:`pivoter.cli.catalog_live`), :mod:`pivoter.cli.catalog_diff` and
:mod:`pivoter.cli.catalog_graph`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.flags import (
    CatalogLocation,
    Count,
    Directory,
    ExistingPath,
    GitRef,
    Host,
    HostPort,
    Name,
    OutputPath,
    Port,
    Seconds,
    TextFile,
    Url,
    VersionText,
)

TEST_CI_FORMATS = ("github", "junit", "sarif")
"""``catalog test -o`` formats for CI systems, besides human, json and yaml."""

GRAPH_FORMATS = {"svg": "svg", "png": "png", "dot": "dot", "gv": "dot", "mmd": "mermaid"}
GRAPH_FORMATS["mermaid"] = "mermaid"
"""``catalog graph -o``: a file extension, or a format name alone (stdout), and its format."""

DEFAULT_MAX_NODES = 600
"""``resolver.channeltest.render.DEFAULT_MAX_NODES`` (``tests/unit/test_cli_imports.py`` checks
that the two agree)."""


def register(subparsers: Subparsers) -> None:
    """Add the ``catalog`` command group."""
    parser = add_command(subparsers, "catalog", "work with file-based catalogs")
    group = parser.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND", required=True)
    for name, (help_text, setup) in _SUBCOMMANDS.items():
        sub = add_command(group, name, help_text)
        if name == "test":
            add_output_flag(sub, TEST_CI_FORMATS)
        elif name != "graph":  # graph's -o names the output file
            add_output_flag(sub)
        setup(sub)


def _add_cache_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="parse every file again instead of reusing the parsed-catalog cache",
    )


def _setup_validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="DIR", type=Directory("catalog"), help="file-based catalog directory"
    )
    _add_cache_flag(parser)
    set_handler(parser, "pivoter.cli.catalog_validate:run")


def _setup_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="DIR", type=Directory("catalog"), help="file-based catalog directory"
    )
    parser.add_argument(
        "--name",
        type=Name("segment", "--name"),
        help="catalog name in HTTP paths (default: DIR's base name)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", type=Host(), help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--grpc-port",
        type=Port(off=True),
        default=50051,
        help="gRPC port (default 50051; 0: a free port; -1: none)",
    )
    parser.add_argument(
        "--http-port",
        type=Port(off=True),
        default=8080,
        help="HTTP port (default 8080; 0: a free port; -1: none)",
    )
    parser.add_argument(
        "--poll-interval",
        type=Seconds(minimum=0.1),
        default=2.0,
        help="seconds between checks of DIR for changes (default 2)",
    )
    set_handler(parser, "pivoter.cli.catalog_serve:run")


def _setup_render(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="SOURCE",
        type=CatalogLocation(),
        help="catalog directory (or file:// URL), catalogd URL (http[s]://) or grpc[s]://host:port",
    )
    _add_cache_flag(parser)
    set_handler(parser, "pivoter.cli.catalog_render:run")
    group = parser.add_argument_group("remote sources (http(s):// catalogd, grpc:// registry)")
    group.add_argument(
        "--ca-file", type=TextFile("--ca-file"), help="CA bundle to verify an https or grpcs server"
    )
    group.add_argument(
        "--token-file",
        type=TextFile("--token-file"),
        help="file holding a bearer token for an https catalogd server",
    )
    group.add_argument(
        "--insecure-send-token",
        action="store_true",
        help="send the token over plain http to a host other than loopback (unencrypted)",
    )
    group.add_argument(
        "--timeout",
        type=Seconds(),
        default=60.0,
        help="seconds the whole fetch of a remote source may take: connecting, every request, "
        "every byte (default 60)",
    )
    group.add_argument(
        "--max-message-bytes",
        type=Count(minimum=1024),
        default=None,
        help="largest gRPC message / HTTP body accepted",
    )


def _setup_test(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="DIR",
        type=ExistingPath("catalog"),
        help="file-based catalog directory, or a template file or directory of templates",
    )
    parser.add_argument("--package", type=Name("text", "--package"), help="test only this package")
    parser.add_argument(
        "--channel", type=Name("text", "--channel"), help="test only channels of this name"
    )
    parser.add_argument(
        "--with",
        dest="others",
        action="append",
        type=Directory("--with catalog"),
        default=[],
        metavar="OTHER",
        help="another catalog directory that may satisfy dependencies (and resolve template "
        "images); repeatable",
    )
    parser.add_argument(
        "--expect",
        metavar="FILE",
        type=TextFile("--expect"),
        help="expectations file (YAML) to check",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not use the parsed-catalog cache"
    )
    parser.add_argument(
        "--legacy-semver-skips",
        action="store_true",
        help="expand olm.semver templates as older opm releases did (skips per minor version)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list every single finding under its group (and one annotation/result each with "
        "-o github|sarif)",
    )
    _add_changed_flags(parser)
    set_handler(parser, "pivoter.cli.catalog_test:run")
    _add_live_flags(parser)


def _add_changed_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "pull requests: report what a change touched or introduced (a catalog directory only)"
    )
    group.add_argument(
        "--changed-since",
        metavar="GIT_REF",
        type=GitRef("--changed-since"),
        help="report findings in packages whose files changed since GIT_REF (working tree "
        "included), and findings present now but not at GIT_REF in any package",
    )
    group.add_argument(
        "--changed-files",
        metavar="FILE",
        type=TextFile("--changed-files"),
        help="a file listing changed paths, one a line (as 'git diff --name-only' prints them, "
        "relative to the working directory): report findings in the packages they touch",
    )


def _add_live_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--live: walk an upgrade path on a cluster")
    group.add_argument(
        "--live",
        dest="handler",
        action="store_const",
        const="pivoter.cli.catalog_live:run",  # the cluster walk is another handler
        help="install --package at --from on the cluster and upgrade along its path, one pivot "
        "per step, with the pivoter daemon running there",
    )
    group.add_argument(
        "--from",
        dest="start",
        metavar="VERSION",
        type=VersionText(what="--from"),
        help="starting version (default: the lowest)",
    )
    group.add_argument(
        "--kubeconfig",
        type=TextFile("kubeconfig"),
        help="kubeconfig file (default: in-cluster, then ~/.kube)",
    )
    group.add_argument(
        "--serve-address",
        default="127.0.0.1:0",
        type=HostPort("--serve-address"),
        metavar="HOST:PORT",
        help="where this process serves the catalog (default 127.0.0.1, a free port)",
    )
    group.add_argument(
        "--catalog-url",
        metavar="URL",
        type=Url(("http", "https")),
        help="the URL the daemon reads the served catalog at (default: from --serve-address)",
    )
    group.add_argument(
        "--progress-deadline",
        type=Count(),
        default=120,
        metavar="SECONDS",
        help="the temporary Resolution's progressDeadlineSeconds (default 120)",
    )
    group.add_argument(
        "--step-timeout",
        type=Seconds(),
        default=300.0,
        metavar="SECONDS",
        help="give up on a step after this long (default 300)",
    )


def _setup_diff(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "old",
        metavar="OLD",
        type=Directory("catalog"),
        help="the catalog directory users installed from",
    )
    parser.add_argument(
        "new",
        metavar="NEW",
        type=Directory("catalog"),
        help="the catalog directory about to be published",
    )
    parser.add_argument(
        "--package", type=Name("text", "--package"), help="compare only this package"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not use the parsed-catalog cache"
    )
    set_handler(parser, "pivoter.cli.catalog_diff:run")


def _setup_graph(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="DIR", type=Directory("catalog"), help="file-based catalog directory"
    )
    parser.add_argument(
        "--package", required=True, type=Name("text", "--package"), help="the package to draw"
    )
    parser.add_argument(
        "--channel",
        type=Name("text", "--channel"),
        help="draw only this channel (default: every channel)",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=OutputPath("-o", stdout=tuple(GRAPH_FORMATS), extensions=tuple(GRAPH_FORMATS)),
        metavar="OUT",
        help="out.svg, out.png, out.dot or out.mmd; or svg|png|dot|mermaid for stdout",
    )
    parser.add_argument(
        "--max-nodes",
        type=Count(maximum=1_000_000),
        default=DEFAULT_MAX_NODES,
        help=f"refuse to draw more bundles than this (default {DEFAULT_MAX_NODES})",
    )
    parser.add_argument(
        "--timeout",
        type=Seconds(),
        default=60.0,
        help="seconds graphviz may take to lay the graph out (default 60)",
    )
    set_handler(parser, "pivoter.cli.catalog_graph:run")


_SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "validate": ("validate a file-based catalog directory", _setup_validate),
    "serve": ("serve a catalog over gRPC (api.Registry) and HTTP (catalogd API)", _setup_serve),
    "render": ("print any catalog source as FBC JSON", _setup_render),
    "test": (
        "check what a catalog's channels do to the people who upgrade through them",
        _setup_test,
    ),
    "diff": ("show what users of an old catalog get from a new one", _setup_diff),
    "graph": ("draw a package's upgrade graph", _setup_graph),
}
