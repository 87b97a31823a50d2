"""In-memory stand-ins for the two boundaries of the pivot state machine (pivoter/pivot/ports.py),
so tests/pivot/test_machine_units.py drives :class:`pivoter.pivot.PivotMachine` without a cluster.

* :class:`FakeChildren` holds an input's child BundleDeployments as plain objects, written the way
  :class:`pivoter.pivot.children.Children` writes them (create-or-update in place, a spec change
  bumps ``metadata.generation``, a delete marks the child and leaves it terminating until its
  finalizer is done). It also plays the BundleDeployment controller: :meth:`FakeChildren.settle`
  finishes deletions and writes, for every child whose conditions are not for its current
  generation, the conditions of the state its bundle reaches (``outcomes``, by bundle name;
  Ready by default). A child's reported state is read from those conditions by the product's
  own :func:`pivoter.pivot.children.state_of`, so a stale condition counts as it would on a
  cluster (``test_fake_children_report_as_the_real_children_do`` compares the reports with
  :meth:`Children.report <pivoter.pivot.children.Children.report>`).
* :class:`FakePreparer` answers the ``Preparing`` phase with a scripted :attr:`result` (a
  :class:`Prepared` group, :class:`Pending` unpacking, or a :class:`PrepareFailed` dry run) and
  records what the machine handed over and released.
* :class:`FakeClock` is the injected clock, advanced by hand.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pivoter.apis import rukpak
from pivoter.kube import Object
from pivoter.pivot.children import (
    ANNOTATION_UNINSTALL,
    REASON_CHILD_MISSING,
    ChildReport,
    ChildState,
    state_of,
)
from pivoter.pivot.naming import (
    ANNOTATION_BUNDLE,
    ANNOTATION_PACKAGE,
    ANNOTATION_REVISION,
    child_name,
)
from pivoter.pivot.ports import ChildrenPort, PreparerPort
from pivoter.pivot.prepare import Pending, Prepared, PrepareFailed
from pivoter.resolvesets import InputRef

__all__ = ["FakeChildren", "FakeClock", "FakePreparer", "Outcome", "conditions_for"]

DELETED_AT = "2026-01-01T00:00:00Z"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The state the BundleDeployment controller leaves a child of some bundle in."""

    state: ChildState = ChildState.READY
    reason: str = ""
    message: str = ""


def conditions_for(outcome: Outcome, generation: int) -> list[dict[str, Any]]:
    """The rukpak conditions a child in ``outcome.state`` reports for ``generation``."""

    def condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
        }

    valid = condition(rukpak.TYPE_HAS_VALID_BUNDLE, "True", rukpak.REASON_UNPACK_SUCCESSFUL)
    installed = condition(
        rukpak.TYPE_INSTALLED, "True", rukpak.REASON_INSTALLATION_SUCCEEDED, "installed"
    )
    state, message = outcome.state, outcome.message
    if state is ChildState.READY:
        return [valid, installed, condition(rukpak.TYPE_HEALTHY, "True", rukpak.REASON_HEALTHY)]
    if state is ChildState.UNHEALTHY:
        unhealthy = condition(
            rukpak.TYPE_HEALTHY,
            "False",
            outcome.reason or rukpak.REASON_UNHEALTHY,
            message or "Deployment web is not available",
        )
        return [valid, installed, unhealthy]
    if state is ChildState.FAILED:
        reason = outcome.reason or rukpak.REASON_INSTALL_FAILED
        failed = condition(rukpak.TYPE_INSTALLED, "False", reason, message or "install failed")
        return [valid, failed]
    if state is ChildState.UNPACK_PENDING:
        pending = condition(
            rukpak.TYPE_HAS_VALID_BUNDLE, "Unknown", rukpak.REASON_UNPACK_PENDING, "unpacking"
        )
        return [pending]
    if state is ChildState.PENDING:
        return []
    raise ValueError(f"a child cannot report {state}: a missing child has no conditions")


@dataclass
class FakeClock:
    """The injected clock: epoch seconds, moved by :meth:`advance` only."""

    now: float = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float | None) -> None:
        """Let ``seconds`` pass (None: none)."""
        self.now += seconds or 0.0


@dataclass
class FakeChildren:
    """An input's child BundleDeployments in memory (see the module docstring)."""

    ref: InputRef = field(default_factory=lambda: InputRef("Resolution", "web"))
    primary: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    """By bundle name: what the controller makes of a child installing it (Ready if absent)."""
    finalizers: bool = True
    """Whether a deleted child stays, terminating, until :meth:`settle` (its uninstall)."""
    settle_on_apply: bool = False
    """Whether the controller acts at once: an applied child reports its outcome right away."""
    objects: dict[str, Object] = field(default_factory=dict)
    """The children by name, as stored."""
    applied: list[tuple[str, str, str]] = field(default_factory=list)
    """(name, bundle, revision) of every :meth:`apply` call."""
    deleted: list[str] = field(default_factory=list)
    """The name of every :meth:`delete` call on a child that existed."""

    # -- ChildrenPort ------------------------------------------------------------------------

    def list(self) -> dict[str, Object]:
        return {
            str(obj["metadata"]["annotations"][ANNOTATION_PACKAGE]): copy.deepcopy(obj)
            for obj in self.objects.values()
        }

    def apply(self, desired: Object) -> Object:
        name = str(desired["metadata"]["name"])
        annotations = desired["metadata"]["annotations"]
        self.applied.append(
            (name, str(annotations[ANNOTATION_BUNDLE]), str(annotations[ANNOTATION_REVISION]))
        )
        stored = self.objects.get(name)
        if stored is None:
            stored = copy.deepcopy(desired)
            stored["metadata"].update(generation=1, uid=f"uid-{name}")
            stored["status"] = {}
            self.objects[name] = stored
            return self._applied(stored)
        metadata = stored["metadata"]
        merged = {**(metadata.get("annotations") or {}), **annotations}
        merged.pop(ANNOTATION_UNINSTALL, None)
        metadata["annotations"] = merged
        metadata["labels"] = copy.deepcopy(desired["metadata"]["labels"])
        metadata["ownerReferences"] = copy.deepcopy(desired["metadata"]["ownerReferences"])
        if stored["spec"] != desired["spec"]:
            stored["spec"] = copy.deepcopy(desired["spec"])
            metadata["generation"] = int(metadata["generation"]) + 1
        return self._applied(stored)

    def _applied(self, stored: Object) -> Object:
        if self.settle_on_apply:
            bundle = str(stored["metadata"]["annotations"][ANNOTATION_BUNDLE])
            outcome = self.outcomes.get(bundle, Outcome())
            stored["status"] = {
                "conditions": conditions_for(outcome, int(stored["metadata"]["generation"]))
            }
        return copy.deepcopy(stored)

    def delete(self, name: str) -> None:
        stored = self.objects.get(name)
        if stored is None:
            return
        self.deleted.append(name)
        stored["metadata"]["annotations"][ANNOTATION_UNINSTALL] = "true"
        if self.finalizers:
            stored["metadata"].setdefault("deletionTimestamp", DELETED_AT)
        else:
            del self.objects[name]

    def report(
        self, package: str, bd: Object | None, *, bundle: str = "", missing: str = "is missing"
    ) -> ChildReport:
        of = f" (bundle {bundle})" if bundle else f" (package {package})"
        if bd is None:
            name = child_name(
                self.ref, package, primary=bool(self.primary) and package == self.primary
            )
            message = f"BundleDeployment {name}{of} {missing}"
            return ChildReport(package, name, ChildState.MISSING, message, REASON_CHILD_MISSING)
        name = str(bd["metadata"]["name"])
        if bd["metadata"].get("deletionTimestamp"):
            message = f"BundleDeployment {name}{of} is being deleted"
            return ChildReport(package, name, ChildState.PENDING, message, "Deleting")
        state, reason, message = state_of(bd)
        return ChildReport(package, name, state, message, reason)

    # -- the BundleDeployment controller and people ------------------------------------------

    def settle(self) -> None:
        """One pass of the BundleDeployment controller: terminating children are gone, every
        other child reports the outcome of its bundle for its current generation."""
        for name, obj in list(self.objects.items()):
            if obj["metadata"].get("deletionTimestamp"):
                del self.objects[name]
                continue
            generation = int(obj["metadata"]["generation"])
            bundle = str(obj["metadata"]["annotations"][ANNOTATION_BUNDLE])
            outcome = self.outcomes.get(bundle, Outcome())
            obj["status"] = {"conditions": conditions_for(outcome, generation)}

    def set_state(self, package: str, outcome: Outcome) -> None:
        """The child of ``package`` reports ``outcome`` for its current generation."""
        obj = self.by_package(package)
        obj["status"] = {"conditions": conditions_for(outcome, int(obj["metadata"]["generation"]))}

    def remove(self, package: str) -> None:
        """Someone deleted the child of ``package`` and its finalizer is done: it is gone."""
        del self.objects[str(self.by_package(package)["metadata"]["name"])]

    def by_package(self, package: str) -> Object:
        """The stored child of ``package`` (KeyError when there is none)."""
        for obj in self.objects.values():
            if obj["metadata"]["annotations"][ANNOTATION_PACKAGE] == package:
                return obj
        raise KeyError(package)

    def installed(self) -> dict[str, tuple[str, str]]:
        """package -> (bundle, revision) of every child that is not terminating."""
        return {
            str(a[ANNOTATION_PACKAGE]): (str(a[ANNOTATION_BUNDLE]), str(a[ANNOTATION_REVISION]))
            for obj in self.objects.values()
            if not obj["metadata"].get("deletionTimestamp")
            for a in [obj["metadata"]["annotations"]]
        }

    def snapshot(self) -> dict[str, Object]:
        """A copy of the stored children (what a restarted daemon would find)."""
        return copy.deepcopy(self.objects)


@dataclass
class FakePreparer:
    """The ``Preparing`` phase, scripted (see the module docstring)."""

    result: Prepared | Pending | PrepareFailed | None = None
    """What :meth:`prepare` answers; None: :class:`Prepared` in :attr:`waves` (or one wave)."""
    waves: tuple[tuple[str, ...], ...] = ()
    released_names: list[str] = field(default_factory=list)
    """What the next :meth:`release` call reports as released (then cleared)."""
    prepared: list[tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = field(default_factory=list)
    """(packages, requires) of every :meth:`prepare` call."""
    handed_over: list[str] = field(default_factory=list)
    """The names of the children :meth:`hand_over` was called with."""
    releases: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    """(input, the children's names) of every :meth:`release` call."""

    def prepare(
        self,
        children: Sequence[Object],
        *,
        owner: Mapping[str, Any],
        requires: Mapping[str, Collection[str]] | None = None,
    ) -> Prepared | Pending:
        packages = tuple(str(c["metadata"]["annotations"][ANNOTATION_PACKAGE]) for c in children)
        needs = {p: tuple(r) for p, r in (requires or {}).items()}
        self.prepared.append((packages, needs))
        if isinstance(self.result, PrepareFailed):
            raise self.result
        if self.result is not None:
            return self.result
        order = self.waves or (tuple(sorted(packages)),)
        return Prepared(order, dict.fromkeys(packages, ()), checked=len(packages))

    def hand_over(self, child: Object) -> None:
        self.handed_over.append(str(child["metadata"]["name"]))

    def release(self, ref: InputRef, children: Mapping[str, Object]) -> list[str]:
        names = tuple(sorted(str(bd["metadata"]["name"]) for bd in children.values()))
        self.releases.append((str(ref), names))
        released, self.released_names = self.released_names, []
        return released


def _conforms(children: FakeChildren, preparer: FakePreparer) -> tuple[ChildrenPort, PreparerPort]:
    """Type-checked proof that the fakes satisfy the machine's boundaries."""
    return children, preparer
