"""The input kinds: the objects that ask pivoter to resolve packages and pivot them, listed once.

pivoter takes three kinds of input, all resolved and pivoted by the shared engine
(:mod:`pivoter.inputs`): its own ``Resolution`` (``pivoter.io``), OpenShift's
``PlatformOperator`` (``platform.openshift.io``) and OLM v1's ``ClusterExtension``
(``olm.operatorframework.io``). An :class:`InputKind` holds what the rooms need to know about
one of them as an API: its resource, where its spec names the identity its bundles install as,
and how its status says which packages it installs now.

Every room that treats every input kind (the other inputs' holdings in joint resolution, a
child's finalizer, admission, the CLI's ``INPUT``) iterates :data:`INPUT_KINDS` or looks a kind
up with :func:`input_kind`: a list written by hand once left ClusterExtensions out of joint
resolution while another list had them (issue 27). ``tests/unit/test_input_kinds.py`` fails on
any other collection of input kinds in ``pivoter/``.

What each kind does differently (reading its spec, writing its status, what deletion means)
stays with its controller, in a :class:`pivoter.inputs.Kind` built for one of these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis import views
from pivoter.apis._fields import FieldError, describe
from pivoter.apis.resources import CLUSTER_EXTENSIONS, PLATFORM_OPERATORS, RESOLUTIONS
from provisioners.apply.resources import Resource

__all__ = [
    "CLUSTER_EXTENSION",
    "INPUT_KINDS",
    "PLATFORM_OPERATOR",
    "RESOLUTION",
    "Account",
    "ActiveRevision",
    "InputKind",
    "InstallIdentity",
    "SelectedPackages",
    "Wanted",
    "input_kind",
    "parse_input",
]

Account = tuple[str, str]
"""A service account: (namespace, name)."""


@dataclass(frozen=True, slots=True)
class SelectedPackages:
    """The input's status lists the packages it installs now: its selection in view (the
    target of a pivot while one runs). A child of any other package is not wanted."""

    packages: frozenset[str]


@dataclass(frozen=True, slots=True)
class ActiveRevision:
    """The input's status lists no packages: it wants the children of its active revision, as
    long as no pivot runs (a pivot may be pruning them). Which phases of ``status.pivot`` are
    over is the pivot's to say (:class:`pivoter.pivot.Phase`)."""

    revision: int | None
    """``status.activeRevision`` (None: nothing installed yet)."""
    pivot_phase: str
    """``status.pivot.phase`` ("" when no pivot was ever recorded)."""


Wanted = SelectedPackages | ActiveRevision
"""What an input's status says it installs now."""


@dataclass(frozen=True, slots=True)
class InstallIdentity:
    """Where an input kind names the identity pivoter installs its bundles as (impersonated),
    and how a refusal of admission speaks of it (docs/security.md)."""

    field: str
    """The spec field naming the service account ("" when the kind has none)."""
    account: Callable[[Mapping[str, Any]], Account | None]
    """The service account a ``spec`` names, or None (the input installs as pivoter itself)."""
    installs: str
    """What the input installs, in a refusal's words ("the bundles")."""
    remedy: str
    """What a writer who may not do everything can do instead."""


@dataclass(frozen=True, slots=True)
class InputKind:
    """One input kind, as the API defines it."""

    resource: Resource
    identity: InstallIdentity
    wanted: Callable[[Mapping[str, Any]], Wanted]
    """What the input's ``status`` says it installs now."""
    parse: Callable[[Mapping[str, object]], views.InputView]
    """The input's typed view (:mod:`pivoter.apis.views`), read once with clear errors."""

    @property
    def kind(self) -> str:
        """The kind's name (``Resolution``)."""
        return self.resource.kind


def _active_revision(status: Mapping[str, Any]) -> ActiveRevision:
    """A status with no selection: a PlatformOperator's always (its API has none)."""
    active = str(status.get("activeRevision") or "")
    revision = int(active) if active.isdigit() else None
    pivot = status.get("pivot")
    phase = pivot.get("phase") if isinstance(pivot, Mapping) else None
    return ActiveRevision(revision, str(phase or ""))


def _selection(status: Mapping[str, Any]) -> Wanted:
    """``status.selection`` of a Resolution or a ClusterExtension; a status that has none yet
    (written before the first resolution, or by an older pivoter) is read by its active
    revision, as a PlatformOperator's."""
    selection = status.get("selection")
    if not isinstance(selection, list):
        return _active_revision(status)
    return SelectedPackages(
        frozenset(str(e.get("package")) for e in selection if isinstance(e, Mapping))
    )


def _resolution_account(spec: Mapping[str, Any]) -> Account | None:
    account = spec.get("serviceAccount") or {}
    name = str(account.get("name") or "")
    return (str(account.get("namespace") or ""), name) if name else None


def _extension_account(spec: Mapping[str, Any]) -> Account | None:
    name = str((spec.get("serviceAccount") or {}).get("name") or "")
    return (str(spec.get("namespace") or ""), name) if name else None


RESOLUTION = InputKind(
    RESOLUTIONS,
    InstallIdentity(
        "spec.serviceAccount",
        _resolution_account,
        "the bundles",
        "name a service account the user may impersonate in spec.serviceAccount",
    ),
    _selection,
    views.ResolutionView.parse,
)
PLATFORM_OPERATOR = InputKind(
    PLATFORM_OPERATORS,
    InstallIdentity(
        "",
        lambda spec: None,
        "the operator",
        "use a Resolution naming a service account the user may impersonate",
    ),
    _active_revision,
    views.PlatformOperatorView.parse,
)
CLUSTER_EXTENSION = InputKind(
    CLUSTER_EXTENSIONS,
    # OLM v1 ignores spec.serviceAccount and trusts every writer; pivoter installs as it.
    InstallIdentity(
        "spec.serviceAccount",
        _extension_account,
        "the extension",
        "name a service account in spec.namespace that the user may impersonate",
    ),
    _selection,
    views.ClusterExtensionView.parse,
)

INPUT_KINDS: tuple[InputKind, ...] = (RESOLUTION, PLATFORM_OPERATOR, CLUSTER_EXTENSION)
"""Every input kind, in the order messages list them."""

_BY_KIND = {k.kind: k for k in INPUT_KINDS}


def input_kind(kind: str) -> InputKind | None:
    """The input kind named ``kind`` (``Resolution``), or None when it is not one."""
    return _BY_KIND.get(kind)


def parse_input(kind: str, obj: Mapping[str, object]) -> views.InputView:
    """The typed view of ``obj``, an input of ``kind``: for code that handles every kind alike
    (e.g. reading the pin). Raises :class:`~pivoter.apis._fields.FieldError` for a kind that is
    not an input kind, or an object its view cannot read."""
    entry = input_kind(kind)
    if entry is None:
        raise FieldError("kind", f"not an input kind pivoter reads: {describe(kind)}")
    return entry.parse(obj)
