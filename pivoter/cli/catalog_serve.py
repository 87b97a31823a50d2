"""``pivoter catalog serve`` and the catalog-source options of ``pivoter catalog render``.

:mod:`pivoter.cli.catalog` builds the command group and calls :func:`add_serve` and
:func:`add_source_options`; :func:`open_catalog` turns a source address plus those options into a
:class:`~resolver.catalog.model.Catalog` for any command that reads catalogs from the wire.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from pivoter.catalogserver.reload import SnapshotError
from pivoter.catalogserver.serve import ServeOptions, serve
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Count, Directory, FlagError, Host, Name, Port, Seconds, TextFile
from pivoter.cli.listen import check_bindable
from pivoter.cli.output import error
from resolver.catalog.model import Catalog
from resolver.catalog.sources import SourceError, open_source


def add_serve(parser: argparse.ArgumentParser) -> None:
    """Add ``serve``'s arguments and handler to its parser."""
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
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="pivoter: %(message)s")
    directory = args.directory
    if not os.path.isdir(directory):
        error(f"{directory} is not a directory")
        return int(ExitCode.INVALID)
    name = args.name or os.path.basename(os.path.abspath(directory))
    try:
        Name("segment", "catalog name")(name)  # it goes into every HTTP path
    except FlagError as exc:
        error(f"{exc}: the name comes from DIR's base name; give one with --name")
        return int(ExitCode.USAGE)
    options = ServeOptions(
        directory=directory,
        name=name,
        host=args.host,
        grpc_port=None if args.grpc_port < 0 else args.grpc_port,
        http_port=None if args.http_port < 0 else args.http_port,
        poll_interval=args.poll_interval,
    )
    if options.grpc_port == options.http_port and options.grpc_port not in (None, 0):
        error(
            f"--grpc-port and --http-port are both {options.grpc_port}: give them different ports"
        )
        return int(ExitCode.USAGE)
    try:
        for what, port in (("gRPC", options.grpc_port), ("HTTP", options.http_port)):
            if port is not None:
                check_bindable(options.host, port, what, ipv4_only=what == "HTTP")  # one line
        serve(options)
    except SnapshotError as err:
        error(f"cannot serve {directory}: {err}")
        return int(ExitCode.INVALID)
    except OSError as err:
        error(f"cannot listen: {err}")
        return int(ExitCode.FAILURE)
    return int(ExitCode.OK)


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that reaching a remote catalog source needs (TLS, token, limits)."""
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
        "--timeout", type=Seconds(), default=30.0, help="seconds before a stalled source fails"
    )
    group.add_argument(
        "--max-message-bytes",
        type=Count(minimum=1024),
        default=None,
        help="largest gRPC message / HTTP body accepted",
    )


def open_catalog(spec: str, args: argparse.Namespace) -> Catalog:
    """Fetch the catalog at ``spec`` (directory, http(s) URL or grpc:// target).

    Raises SourceError naming the source when it cannot be read.
    """
    options: dict[str, object] = {}
    if spec.startswith(("http://", "https://", "grpc://", "grpcs://")):
        options["timeout"] = getattr(args, "timeout", 30.0)
        if getattr(args, "ca_file", None):
            options["ca_file"] = args.ca_file
        limit = getattr(args, "max_message_bytes", None)
        if spec.startswith("http") and getattr(args, "token_file", None):
            with open(args.token_file, encoding="utf-8") as f:
                options["token"] = f.read().strip()
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


__all__ = ["SourceError", "add_serve", "add_source_options", "open_catalog"]
