"""The two boundaries of the pivot state machine: the children it writes and the preparer it asks.

:class:`PivotMachine <pivoter.pivot.machine.PivotMachine>` needs only these few calls, so it is
typed against them rather than against the classes that talk to the API server.
:class:`~pivoter.pivot.children.Children` and :class:`~pivoter.pivot.prepare.Preparer` satisfy
them as they are (the daemon passes those); the unit tests pass in-memory fakes
(tests/pivot/fakes.py) and drive every transition without a cluster.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from pivoter.kube import Object
from pivoter.pivot.children import ChildReport
from pivoter.pivot.prepare import Pending, Prepared
from pivoter.resolvesets import InputRef

__all__ = ["ChildrenPort", "PreparerPort"]


class ChildrenPort(Protocol):
    """ChildrenPort is what the machine does with an input's child BundleDeployments
    (implemented by :class:`~pivoter.pivot.children.Children`)."""

    def list(self) -> dict[str, Object]:
        """The input's children by package, as they are now."""
        ...

    def apply(self, desired: Object) -> Object:
        """Create the child, or update it in place to ``desired``; return it as stored."""
        ...

    def delete(self, name: str) -> None:
        """Delete one child (its finalizer uninstalls it); nothing when it is gone already."""
        ...

    def report(
        self, package: str, bd: Object | None, *, bundle: str = "", missing: str = "is missing"
    ) -> ChildReport:
        """The state of ``package``'s child ``bd`` (None: it is missing, and why: ``missing``)."""
        ...


class PreparerPort(Protocol):
    """PreparerPort is what the machine asks of the ``Preparing`` phase and of the Bundles it
    prepared (implemented by :class:`~pivoter.pivot.prepare.Preparer`)."""

    def prepare(
        self,
        children: Sequence[Object],
        *,
        owner: Mapping[str, Any],
        requires: Mapping[str, Collection[str]] | None = None,
    ) -> Prepared | Pending:
        """Unpack, render, order and dry-run the desired ``children``; raise
        :class:`~pivoter.pivot.prepare.PrepareFailed` naming a bundle that cannot be installed."""
        ...

    def hand_over(self, child: Object) -> None:
        """Make the applied ``child`` the controller of its prepared Bundle."""
        ...

    def release(self, ref: InputRef, children: Mapping[str, Object]) -> list[str]:
        """Delete the input's prepared Bundles no current child uses; return their names."""
        ...
