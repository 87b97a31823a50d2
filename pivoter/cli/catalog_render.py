"""``pivoter catalog render SOURCE``: print a catalog as FBC JSON exactly as ``opm render`` does
(or as YAML documents with ``-o yaml``).

Directories are read by :func:`resolver.catalog.load.load_directory`; other sources (catalogd
HTTP, gRPC) through :func:`resolver.catalog.sources.open_source` with the remote-source
options. Its flags: :mod:`pivoter.cli.commands.catalog`.

``--timeout`` is the deadline of the whole fetch: connecting, every request and every byte of
every answer, whatever the server does (a server that drips its headers one byte at a time used
to hold the command for the sources' own 600 s deadline, because ``--timeout`` only bounded each
silence). A silence longer than :data:`STALL_SECONDS` (or the deadline, if shorter) fails at once.
``--token-file`` is read by :func:`resolver.net.read_token_file`: surrounding whitespace is
trimmed (what ``echo token > file`` writes, as client-go reads token files); a file holding
anything that cannot go into an HTTP header is refused naming the file (exit 3), never echoing it.
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import error
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog
from resolver.catalog.render import encode, objects_in_render_order
from resolver.catalog.sources import SourceError, open_source
from resolver.net import InvalidCredential, read_token_file

__all__ = ["STALL_SECONDS", "open_catalog", "run"]

REMOTE = ("http://", "https://", "grpc://", "grpcs://")
"""Schemes of the sources fetched over the network (the rest are directories)."""
STALL_SECONDS = 30.0
"""Longest silence of a remote source before it counts as stalled (clipped to ``--timeout``)."""


def open_catalog(spec: str, args: argparse.Namespace) -> Catalog:
    """Fetch the catalog at ``spec`` (directory, http(s) URL or grpc:// target).

    ``args.timeout`` is the deadline of the whole fetch. Raises SourceError naming the source
    when it cannot be read, InvalidCredential when the token file holds no usable token, OSError
    when it cannot be read.
    """
    options: dict[str, object] = {}
    if spec.startswith(REMOTE):
        deadline = float(getattr(args, "timeout", STALL_SECONDS))
        options["deadline"] = deadline
        options["timeout"] = min(STALL_SECONDS, deadline)
        if getattr(args, "ca_file", None):
            options["ca_file"] = args.ca_file
        limit = getattr(args, "max_message_bytes", None)
        if spec.startswith("http") and getattr(args, "token_file", None):
            options["token"] = read_token_file(args.token_file)
            options["insecure_send_token"] = bool(getattr(args, "insecure_send_token", False))
        if limit:
            options["max_bytes" if spec.startswith("http") else "max_message_bytes"] = limit
    source = open_source(spec, **options)
    catalog = source.fetch()
    stale = getattr(source, "stale", None)
    if stale:
        # The server kept its last good content after its own source broke: say so.
        sys.stderr.write(f"pivoter: warning: {spec} serves stale content: {stale}\n")
    return catalog


def _open(spec: str, use_cache: bool, args: argparse.Namespace | None = None) -> Catalog:
    path = spec.removeprefix("file://")
    if "://" not in path or os.path.isdir(path):
        return load_directory(path, use_cache=use_cache)
    return open_catalog(spec, args or argparse.Namespace())


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog render``."""
    try:
        catalog = _open(args.source, not args.no_cache, args)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE if err.io else ExitCode.INVALID)
    except InvalidCredential as err:  # names the token file, never the token
        error(str(err))
        return int(ExitCode.INVALID)
    except (SourceError, OSError) as err:  # a source's failure (network, protocol), reported
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
