"""CLI conventions: help, version, exit codes, ``-o`` on every data-printing command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from pivoter import __version__
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.main import build_parser, main


def _subcommand_parsers() -> dict[str, object]:
    parser = build_parser()
    actions = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert len(actions) == 1
    return dict(actions[0].choices)  # type: ignore[attr-defined]


def test_console_script_help_lists_commands_and_exit_codes() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pivoter.cli.main", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for command in ("run", "resolve", "catalog", "history", "rollback", "version"):
        assert f"    {command}" in result.stdout
    assert "exit codes:" in result.stdout
    for code in ExitCode:
        assert f"  {code.value}  " in result.stdout


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pivoter {__version__}"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_machine_output_is_parseable_and_alone_on_stdout(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["version", "-o", fmt]) == ExitCode.OK
    out = capsys.readouterr().out
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert data["pivoter"] == __version__
    assert "python-sat" in data["libraries"]


def test_human_output_is_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == ExitCode.OK
    assert capsys.readouterr().out.startswith(f"pivoter {__version__}")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == ExitCode.USAGE
    assert "usage: pivoter" in capsys.readouterr().err


def test_unknown_flag_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["version", "--no-such-flag"])
    assert exc.value.code == ExitCode.USAGE


def test_every_command_documents_exit_codes_in_help() -> None:
    for name, sub in _subcommand_parsers().items():
        help_text = sub.format_help()  # type: ignore[attr-defined]
        assert "exit codes:" in help_text, name


def test_data_commands_accept_output_flag() -> None:
    """Every command that prints data offers -o human|json|yaml (run only serves, never prints)."""
    for name, sub in _subcommand_parsers().items():
        if name == "run":
            continue
        if name == "catalog":
            sub_actions = [
                a
                for a in sub._actions  # type: ignore[attr-defined]
                if a.__class__.__name__ == "_SubParsersAction"
            ]
            parsers = list(sub_actions[0].choices.values())
        else:
            parsers = [sub]
        for parser in parsers:
            flags = {s for a in parser._actions for s in a.option_strings}
            assert {"-o", "--output"} <= flags, parser.prog
