"""What the commands' parsers share: a command's parser, its handler, the ``-o`` and
``--kubeconfig`` flags, and the arguments of the input commands (``history``, ``rollback``,
``unpin``, ``plan``, ``approve``)."""

from __future__ import annotations

import argparse
from typing import Any

from pivoter.cli.errors import Handler
from pivoter.cli.exitcodes import EPILOG
from pivoter.cli.flags import InputArgument, Name, TextFile
from pivoter.daemon.settings import DEFAULT_NAMESPACE

Subparsers = Any  # argparse's _SubParsersAction is private; this alias names what we pass around

OUTPUT_FORMATS = ("human", "json", "yaml")


def add_command(subparsers: Subparsers, name: str, help_text: str) -> argparse.ArgumentParser:
    """Add a command parser that shares pivoter's help layout and exit-code epilog."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help_text,
        description=help_text,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def set_handler(parser: argparse.ArgumentParser, handler: Handler) -> None:
    """Set the function that runs the command: it takes the parsed arguments and returns the exit
    code, and imports what it needs when it runs."""
    parser.set_defaults(handler=handler)


def add_cache_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--no-cache`` (``catalog validate`` and ``catalog render``: the commands that read a
    catalog directory through the parsed-catalog cache)."""
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="parse every file again instead of reusing the parsed-catalog cache",
    )


def add_output_flag(parser: argparse.ArgumentParser, extra: tuple[str, ...] = ()) -> None:
    """Add the ``-o/--output`` flag every data-printing command shares (``extra``: formats
    of this command only)."""
    parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS + extra,
        default="human",
        help="output format (default: human-readable text)",
    )


def add_kubeconfig_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--kubeconfig``, for the commands that reach a cluster."""
    parser.add_argument(
        "--kubeconfig",
        type=TextFile("kubeconfig"),
        help="kubeconfig file (default: in-cluster, then ~/.kube)",
    )


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``INPUT``, ``--kubeconfig``, ``--namespace`` and ``-o``: what every input command takes
    (they read the input through :func:`pivoter.cli._inputs.run_on_input`)."""
    parser.add_argument(
        "input",
        metavar="INPUT",
        type=InputArgument(),
        help="a Resolution name, or KIND/NAME for any input kind (resolution, platformoperator, "
        "clusterextension)",
    )
    add_kubeconfig_flag(parser)
    parser.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        type=Name("dns-label", "namespace"),
        help="pivoter's namespace, where revisions are kept (default %(default)s)",
    )
    add_output_flag(parser)
