"""What the input commands (``history``, ``rollback``, ``unpin``, ``plan``, ``approve``) share:
naming an input on the command line, reaching the cluster, and reading its revisions.

``INPUT`` is ``NAME`` (a Resolution), ``resolution/NAME`` or ``platformoperator/NAME``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import InputSpec, Name, TextFile
from pivoter.cli.output import add_output_flag, error
from pivoter.kube import Kube, KubeConfigError, KubeError, NotFound, Resource, load_client
from pivoter.platformoperators import PLATFORM_OPERATORS
from pivoter.resolutions import ANNOTATION_PINNED_REVISION, RESOLUTIONS
from pivoter.resolvesets import InputRef, RevisionStore

__all__ = ["ANNOTATION_PINNED_REVISION", "Target", "add_input_arguments", "run_on_input"]

DEFAULT_NAMESPACE = "pivoter-system"
_KINDS = {"resolution": RESOLUTIONS, "platformoperator": PLATFORM_OPERATORS}


class InputError(Exception):
    """The input named on the command line cannot be used (exit 3)."""


@dataclass
class Target:
    """One input, read from the cluster, with its revision store."""

    kube: Kube
    resource: Resource
    ref: InputRef
    obj: dict[str, Any]
    store: RevisionStore

    @property
    def status(self) -> dict[str, Any]:
        """The input's status (empty when it has none yet)."""
        return dict(self.obj.get("status") or {})

    def patch(self, patch: dict[str, Any]) -> dict[str, Any]:
        """Merge-patch the input."""
        return self.kube.merge_patch(self.resource, self.ref.name, patch)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``INPUT``, ``--kubeconfig``, ``--namespace`` and ``-o``."""
    parser.add_argument(
        "input",
        metavar="INPUT",
        type=InputSpec(),
        help="a Resolution name, or resolution/NAME or platformoperator/NAME",
    )
    parser.add_argument(
        "--kubeconfig",
        type=TextFile("kubeconfig"),
        help="kubeconfig file (default: in-cluster, then ~/.kube)",
    )
    parser.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        type=Name("dns-label", "namespace"),
        help=f"pivoter's namespace, where revisions are kept (default {DEFAULT_NAMESPACE})",
    )
    add_output_flag(parser)


def _parse(text: str) -> tuple[Resource, str]:
    kind, sep, name = text.partition("/")
    if not sep:
        return RESOLUTIONS, text
    resource = _KINDS.get(kind.lower().removesuffix("s"))
    if resource is None or not name:
        raise InputError(f"INPUT {text!r}: expected NAME, resolution/NAME or platformoperator/NAME")
    return resource, name


def run_on_input(args: argparse.Namespace, body: Callable[[Target], int]) -> int:
    """Read the input named by ``args`` and run ``body`` on it, mapping errors to exit codes."""
    try:
        resource, name = _parse(args.input)
    except InputError as exc:
        error(str(exc))
        return int(ExitCode.INVALID)
    try:
        kube = Kube(load_client(args.kubeconfig))
    except KubeConfigError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        try:
            obj = kube.get(resource, name)
        except NotFound:
            error(f"{resource.kind} {name} does not exist")
            return int(ExitCode.INVALID)
        target = Target(
            kube, resource, InputRef(resource.kind, name), obj, RevisionStore(kube, args.namespace)
        )
        return body(target)
    except InputError as exc:
        error(str(exc))
        return int(ExitCode.INVALID)
    except KubeError as exc:
        error(f"the API server refused: {exc}")
        return int(ExitCode.FAILURE)
