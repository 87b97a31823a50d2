"""``pivoter catalog serve DIR``: serve a catalog over gRPC (``api.Registry``) and HTTP (catalogd).

Checks the name and the ports, binds them first (one line when it cannot) and runs
:func:`pivoter.catalogserver.serve.serve` until a signal.
"""

from __future__ import annotations

import argparse
import logging
import os

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Directory, FlagError, Host, Name, Port, Seconds
from pivoter.cli.output import error

__all__ = ["register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``catalog serve``."""
    parser = add_command(
        subparsers, "serve", "serve a catalog over gRPC (api.Registry) and HTTP (catalogd API)"
    )
    add_output_flag(parser)
    parser.add_argument(
        "directory", metavar="DIR", type=Directory("catalog"), help="file-based catalog directory"
    )
    parser.add_argument(
        "--name",
        type=Name("segment", "--name"),
        help="catalog name in HTTP paths (default: DIR's base name)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        type=Host(),
        help="address to listen on (default: %(default)s)",
    )
    parser.add_argument(
        "--grpc-port",
        type=Port(off=True),
        default=50051,
        help="gRPC port (default %(default)s; 0: a free port; -1: none)",
    )
    parser.add_argument(
        "--http-port",
        type=Port(off=True),
        default=8080,
        help="HTTP port (default %(default)s; 0: a free port; -1: none)",
    )
    parser.add_argument(
        "--poll-interval",
        type=Seconds(minimum=0.1),
        default=2.0,
        help="seconds between checks of DIR for changes (default %(default)g)",
    )
    set_handler(parser, run)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog serve``."""
    from pivoter.catalogserver.reload import SnapshotError
    from pivoter.catalogserver.serve import ServeOptions, serve
    from pivoter.cli.listen import check_bindable

    logging.basicConfig(level=logging.INFO, format="pivoter: %(message)s")
    directory = args.directory
    name = args.name
    if name is None:
        name = os.path.basename(os.path.abspath(directory))
        try:
            Name("segment", "catalog name")(name)  # it goes into every HTTP path
        except FlagError as exc:
            error(f"{exc}: the name comes from DIR's base name; give one with --name")
            return int(ExitCode.USAGE)
    options = ServeOptions(
        directory=directory,
        name=name,
        host=args.host,
        grpc_port=args.grpc_port,
        http_port=args.http_port,
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
