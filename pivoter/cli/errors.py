"""The last line of defence of every ``pivoter`` command: expected failures become one line.

:func:`run_handler` runs a command's handler; an exception that a user's input or environment can
cause (a file that cannot be read, a kubeconfig that cannot be used, an API server or catalog
source that cannot be reached, a catalog that does not load, a server address that cannot be
bound) is printed as ``pivoter: error: ...`` on one line and mapped to its documented exit code.
Anything else is a bug in pivoter: it is reported as such, with its traceback, and exits
``INTERNAL`` (70) so that it is never mistaken for a user's mistake.

Each kind of failure is recognised only when the module defining its class has been imported: an
exception cannot be raised before its class exists, and so reporting one imports nothing (no
kubernetes, gRPC, YAML) that the command did not load already.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import error

__all__ = ["Handler", "describe", "run_handler"]

Handler = Callable[[argparse.Namespace], int]
"""What runs a command: the parsed arguments in, the exit code out."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    return f"{reason}: {' -> '.join(names)}" if names else reason


def describe(exc: BaseException) -> tuple[str, ExitCode] | None:
    """The one-line message and exit code of an expected failure; None for a bug."""
    loaded = sys.modules
    if "pivoter.kube.config" in loaded or "provisioners.apply.kubeerrors" in loaded:
        from pivoter.kube import KubeConfigError, KubeError

        if isinstance(exc, KubeConfigError):
            return _one_line(str(exc)), ExitCode.FAILURE
        if isinstance(exc, KubeError):
            return _one_line(f"the Kubernetes API failed: {exc}"), ExitCode.FAILURE
    if "resolver.catalog.sources.base" in loaded:
        from resolver.catalog.sources import CatalogSourceError

        if isinstance(exc, CatalogSourceError):
            return _one_line(str(exc)), ExitCode.FAILURE
    if "resolver.catalog.errors" in loaded:
        from resolver.catalog.errors import CatalogLoadError

        if isinstance(exc, CatalogLoadError):
            first = str(exc.problems[0]) if exc.problems else str(exc)
            more = (
                f" (and {len(exc.problems) - 1} more problem(s))" if len(exc.problems) > 1 else ""
            )
            return _one_line(first + more), ExitCode.FAILURE if exc.io else ExitCode.INVALID
    if "grpc" in loaded:
        import grpc

        if isinstance(exc, grpc.RpcError):
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
            name = code.name if code is not None else "error"
            return _one_line(f"gRPC call failed: {name}: {details}"), ExitCode.FAILURE
    if isinstance(exc, UnicodeDecodeError):
        return _one_line(f"input is not UTF-8 text: {exc.reason}"), ExitCode.FAILURE
    if "yaml.error" in loaded:
        import yaml

        if isinstance(exc, yaml.YAMLError):
            return _one_line(f"malformed YAML: {exc}"), ExitCode.INVALID
    if isinstance(exc, OSError):
        return _one_line(_os_error(exc)), ExitCode.FAILURE
    return None


def run_handler(handler: Handler, args: argparse.Namespace) -> int:
    """Run ``handler``; map expected failures to one line and their exit code."""
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        return int(ExitCode.OK)
    except Exception as exc:
        described = describe(exc)
        if described is None:
            sys.stderr.write(
                "pivoter: internal error (a bug in pivoter; please report it with this output):\n"
            )
            traceback.print_exc()
            return int(ExitCode.INTERNAL)
        message, code = described
        error(message)
        return int(code)
