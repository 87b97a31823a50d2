"""What the input commands (``history``, ``rollback``, ``unpin``, ``plan``, ``approve``) share:
reaching the cluster and reading the input's revisions (their flags:
:func:`pivoter.cli.commands._common.add_input_arguments`).

``INPUT`` is read by :class:`pivoter.cli.flags.InputArgument` into the kind and the name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pivoter.apis.inputs import input_kind
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import InputArgument
from pivoter.cli.output import error
from pivoter.inputs import ANNOTATION_PINNED_REVISION
from pivoter.kube import Kube, KubeConfigError, KubeError, NotFound, Resource, load_client
from pivoter.resolvesets import InputRef, RevisionStore

__all__ = ["ANNOTATION_PINNED_REVISION", "InputError", "Target", "run_on_input"]


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


def run_on_input(args: argparse.Namespace, body: Callable[[Target], int]) -> int:
    """Read the input named by ``args`` and run ``body`` on it, mapping errors to exit codes."""
    entry = input_kind(args.input.kind)
    if entry is None:
        error(InputArgument.unknown(args.input.text))
        return int(ExitCode.INVALID)
    resource, name = entry.resource, args.input.name
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
