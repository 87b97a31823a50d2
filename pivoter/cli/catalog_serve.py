"""``pivoter catalog serve DIR``: serve a catalog over gRPC (``api.Registry``) and HTTP (catalogd).

Checks the name and the ports, binds them first (one line when it cannot) and runs
:func:`pivoter.catalogserver.serve.serve` until a signal. Its flags:
:mod:`pivoter.cli.commands.catalog`.
"""

from __future__ import annotations

import argparse
import logging
import os

from pivoter.catalogserver.reload import SnapshotError
from pivoter.catalogserver.serve import ServeOptions, serve
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import FlagError, Name
from pivoter.cli.listen import check_bindable
from pivoter.cli.output import error


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter catalog serve``."""
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


__all__ = ["run"]
