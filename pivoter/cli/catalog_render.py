"""``pivoter catalog render SOURCE``: print a catalog as FBC JSON exactly as ``opm render`` does
(or as YAML documents with ``-o yaml``).

Directories are read by :func:`resolver.catalog.load.load_directory`; other sources (catalogd
HTTP, gRPC) through :func:`resolver.catalog.sources.open_source` with the remote-source
options. What ``SOURCE`` is (a directory or which network source) is known once it is parsed
(:class:`~pivoter.cli.flags.CatalogLocation`).

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
import sys
from typing import TYPE_CHECKING

from pivoter.cli.commands._common import (
    Subparsers,
    add_cache_flag,
    add_command,
    add_output_flag,
    set_handler,
)
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import CatalogLocation, Count, Location, Seconds, TextFile
from pivoter.cli.output import error

if TYPE_CHECKING:
    from resolver.catalog.model import Catalog

__all__ = ["FETCH_TIMEOUT", "STALL_SECONDS", "register", "run"]

STALL_SECONDS = 30.0
"""Longest silence of a remote source before it counts as stalled (clipped to ``--timeout``)."""

FETCH_TIMEOUT = 60.0
"""Default ``--timeout`` of ``catalog render`` and ``resolve``: seconds the fetch of every remote
catalog together may take."""


def register(subparsers: Subparsers) -> None:
    """Add ``catalog render``."""
    parser = add_command(subparsers, "render", "print any catalog source as FBC JSON")
    add_output_flag(parser)
    parser.add_argument(
        "source",
        metavar="SOURCE",
        type=CatalogLocation(),
        help="catalog directory (or file:// URL), catalogd URL (http[s]://) or grpc[s]://host:port",
    )
    add_cache_flag(parser)
    set_handler(parser, run)
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
        default=FETCH_TIMEOUT,
        help="seconds the whole fetch of a remote source may take: connecting, every request, "
        "every byte (default %(default)g)",
    )
    group.add_argument(
        "--max-message-bytes",
        type=Count(minimum=1024),
        default=None,
        help="largest gRPC message / HTTP body accepted",
    )


def _fetch(location: Location, args: argparse.Namespace) -> Catalog:
    """Fetch the catalog of a network source as the remote-source flags say.

    ``--timeout`` is the deadline of the whole fetch. Raises CatalogSourceError naming the source
    when it cannot be read, InvalidCredential when the token file holds no usable token, OSError
    when it cannot be read.
    """
    from resolver.catalog.sources import open_source
    from resolver.net import read_token_file

    http = location.scheme in ("http", "https")
    options: dict[str, object] = {
        "deadline": args.timeout,
        "timeout": min(STALL_SECONDS, args.timeout),
    }
    if args.ca_file:
        options["ca_file"] = args.ca_file
    if http and args.token_file:
        options["token"] = read_token_file(args.token_file)
        options["insecure_send_token"] = args.insecure_send_token
    if args.max_message_bytes:
        options["max_bytes" if http else "max_message_bytes"] = args.max_message_bytes
    source = open_source(location.text, **options)
    catalog = source.fetch()
    stale = getattr(source, "stale", None)
    if stale:
        # The server kept its last good content after its own source broke: say so.
        sys.stderr.write(f"pivoter: warning: {location} serves stale content: {stale}\n")
    return catalog


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog render``."""
    import yaml

    from resolver.catalog.errors import CatalogLoadError
    from resolver.catalog.load import load_directory
    from resolver.catalog.render import encode, objects_in_render_order
    from resolver.catalog.sources import CatalogSourceError
    from resolver.net import InvalidCredential

    location: Location = args.source
    try:
        if location.remote:
            catalog = _fetch(location, args)
        else:
            catalog = load_directory(location.path, use_cache=not args.no_cache)
    except CatalogLoadError as err:
        for problem in err.problems:
            error(str(problem))
        return int(ExitCode.FAILURE if err.io else ExitCode.INVALID)
    except InvalidCredential as err:  # names the token file, never the token
        error(str(err))
        return int(ExitCode.INVALID)
    except (CatalogSourceError, OSError) as err:  # a source's failure (network, protocol), reported
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
