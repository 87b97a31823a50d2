"""ResolveSet history commands: ``history``, ``rollback``, ``unpin``, ``plan``, ``approve``."""

from __future__ import annotations

from pivoter.cli._common import Subparsers, add_command, unavailable
from pivoter.cli.output import add_output_flag

_COMMANDS = {
    "history": "list the ResolveSet revisions of an input",
    "rollback": "pin an input to an earlier ResolveSet revision",
    "unpin": "let an input follow its catalogs again after a rollback",
    "plan": "show what the next pivot of an input would do, without doing it",
    "approve": "approve a pending pivot of an input with Manual approval",
}


def register(subparsers: Subparsers) -> None:
    """Add the ResolveSet history commands."""
    for name, help_text in _COMMANDS.items():
        parser = add_command(subparsers, name, help_text)
        parser.add_argument("input", metavar="INPUT", help="Resolution or PlatformOperator name")
        add_output_flag(parser)
        parser.set_defaults(handler=unavailable(f"pivoter {name}"))
