"""``pivoter catalog ...``: validate, serve, render, test, diff and draw file-based catalogs.

``validate DIR`` checks a directory with opm's rules (:mod:`resolver.catalog.validate`) and reports
every defect with file and line; ``render SOURCE`` prints a catalog as FBC JSON exactly as
``opm render`` does. Directories are read by :func:`resolver.catalog.load.load_directory`; other
sources (catalogd HTTP, gRPC) through :func:`resolver.catalog.sources.open_source`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import yaml

from pivoter.cli import catalog_diff, catalog_graph, catalog_test
from pivoter.cli._common import Subparsers, add_command
from pivoter.cli.catalog_serve import add_serve, add_source_options, open_catalog
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import CatalogLocation, Directory
from pivoter.cli.output import add_output_flag, emit, error
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog
from resolver.catalog.render import encode, objects_in_render_order
from resolver.catalog.validate import Finding, validate

_SUBCOMMANDS = {
    "validate": "validate a file-based catalog directory",
    "serve": "serve a catalog over gRPC (api.Registry) and HTTP (catalogd API)",
    "render": "print any catalog source as FBC JSON",
    "test": "check what a catalog's channels do to the people who upgrade through them",
    "diff": "show what users of an old catalog get from a new one",
    "graph": "draw a package's upgrade graph",
}


_MAINTAINER_TOOLS = {
    "test": catalog_test.setup,
    "diff": catalog_diff.setup,
    "graph": catalog_graph.setup,
}


def register(subparsers: Subparsers) -> None:
    """Add the ``catalog`` command group."""
    parser = add_command(subparsers, "catalog", "work with file-based catalogs")
    group = parser.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND", required=True)
    for name, help_text in _SUBCOMMANDS.items():
        sub = add_command(group, name, help_text)
        if name != "graph":  # graph's -o names the output file
            add_output_flag(sub)
        if name == "validate":
            _setup_validate(sub)
        elif name == "render":
            _setup_render(sub)
            add_source_options(sub)
        elif name == "serve":
            add_serve(sub)
        else:
            _MAINTAINER_TOOLS[name](sub)


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
    parser.set_defaults(handler=_validate)


def _setup_render(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="SOURCE",
        type=CatalogLocation(),
        help="catalog directory (or file:// URL), catalogd URL (http[s]://) or grpc[s]://host:port",
    )
    _add_cache_flag(parser)
    parser.set_defaults(handler=_render)


def _load_problem_findings(err: CatalogLoadError) -> list[dict[str, Any]]:
    return [
        {
            "severity": "error",
            "category": "io" if p.io else "load",
            "message": p.message,
            "file": p.origin.path if p.origin else "",
            "line": p.origin.line if p.origin else 0,
            "object": None,
        }
        for p in err.problems
    ]


def _human_findings(data: dict[str, Any]) -> str:
    lines = []
    for f in data["findings"]:
        where = f["file"] + (f":{f['line']}" if f["line"] else "")
        prefix = f"{where}: " if where else ""
        lines.append(f"{prefix}{f['severity']}: {f['message']} [{f['category']}]")
    lines.append(data["summary"])
    return "\n".join(lines)


def _validate(args: argparse.Namespace) -> int:
    directory: str = args.directory
    try:
        catalog = load_directory(directory, use_cache=not args.no_cache)
    except CatalogLoadError as err:
        findings = _load_problem_findings(err)
        code = ExitCode.FAILURE if err.io else ExitCode.INVALID
        summary = f"{directory}: cannot be loaded ({len(findings)} problem(s))"
        emit(
            {"passed": False, "findings": findings, "summary": summary},
            args.output,
            _human_findings,
        )
        return int(code)
    found: list[Finding] = validate(catalog)
    summary = (
        f"{directory}: {'invalid' if found else 'valid'}: {len(catalog.packages)} packages, "
        f"{len(catalog.channels)} channels, {len(catalog.bundles)} bundles"
        + (f", {len(found)} finding(s)" if found else "")
    )
    data = {"passed": not found, "findings": [f.to_dict() for f in found], "summary": summary}
    emit(data, args.output, _human_findings)
    return int(ExitCode.INVALID if found else ExitCode.OK)


def _open(spec: str, use_cache: bool, args: argparse.Namespace | None = None) -> Catalog:
    path = spec.removeprefix("file://")
    if "://" not in path or os.path.isdir(path):
        return load_directory(path, use_cache=use_cache)
    return open_catalog(spec, args or argparse.Namespace())


def _render(args: argparse.Namespace) -> int:
    try:
        catalog = _open(args.source, not args.no_cache, args)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE if err.io else ExitCode.INVALID)
    except Exception as err:  # a source's failure (network, protocol), reported not raised
        from resolver.catalog.sources import SourceError

        if not isinstance(err, SourceError | OSError):
            raise
        error(str(err))
        return int(ExitCode.FAILURE)
    out = sys.stdout.buffer
    if args.output == "yaml":
        for obj in objects_in_render_order(catalog):
            out.write(b"---\n")
            out.write(yaml.safe_dump(obj, sort_keys=False, allow_unicode=True).encode())
    else:
        for obj in objects_in_render_order(catalog):
            out.write(encode(obj))
    out.flush()
    return int(ExitCode.OK)
