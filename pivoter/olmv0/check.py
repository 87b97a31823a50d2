"""Which operators ``pivoter adopt`` can take over, before anything is changed:
``pivoter adopt --check``.

One :class:`AdoptionCheck` per operator, with a typed :class:`AdoptionVerdict` and every reason
behind it, for the OLM v0 Subscriptions and the OLM v1 ClusterExtensions asked about:

* ``Adoptable``: ``pivoter adopt`` (a Subscription) or pivoter serving OLM v1 (a
  ClusterExtension) takes it over as it stands; ``notes`` say what is only checked later (for a
  Subscription, that a catalog pivoter reads offers the installed bundle: the adoption's
  Planning step, which changes nothing when none does) or the one thing to add (a
  ClusterExtension's ``pivoter.io/adopt-existing`` annotation);
* ``Refused``: the reasons of :mod:`pivoter.olmv0.refusals` (a Subscription), or why a
  ClusterExtension cannot be taken over (nothing installed, OLM v1 serves its CRDs, ...);
* ``Adopted``: a Resolution records the adoption as done, or pivoter has an active ResolveSet
  revision for the ClusterExtension;
* ``InProgress``: a Resolution records an adoption step short of ``Adopted`` (``pivoter adopt``
  or the daemon's adoption controller finishes it), or pivoter's first pivot of the
  ClusterExtension has not made a revision active yet;
* ``Conflict``: another pivoter input (any kind of :data:`pivoter.apis.inputs.INPUT_KINDS`)
  installs or selected the same package already, or the adoption's Resolution name is taken.

The reads are few and fixed: each input kind and pivoter's children are listed once; with
``--all`` the Subscriptions, OperatorGroups, InstallPlans and CSVs of the whole cluster are
listed once each too (not namespace by namespace, which :func:`pivoter.olmv0.survey.survey`
does for one namespace). The verdicts themselves are pure functions of what was read
(:func:`subscription_check`, :func:`record_check`, :func:`extension_check`). Called by
``pivoter adopt --check``; docs/migrate-from-olm-v0.md, "Checking first".
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pivoter.apis import olmv1
from pivoter.apis.inputs import CLUSTER_EXTENSION, INPUT_KINDS, RESOLUTION, SelectedPackages
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CLUSTER_CATALOGS, CRDS
from pivoter.apis.views import ANNOTATION_ADOPT_EXISTING, ClusterExtensionView, FieldError
from pivoter.inputs.record import Record
from pivoter.kube import Kube, NotFound, Object, Resource
from pivoter.olmv0 import groups, handover
from pivoter.olmv0.mapping import (
    ANNOTATION_ADOPTION,
    ANNOTATION_CSV,
    LABEL_ADOPTED_FROM,
    recorded_subscription,
    resolution_name,
)
from pivoter.olmv0.refusals import namespace_refusals, refusals
from pivoter.olmv0.resources import CSVS, INSTALL_PLANS, OPERATOR_GROUPS, SUBSCRIPTIONS
from pivoter.olmv0.survey import COPIED_LABEL, InstalledOperator, NamespaceSurvey, survey
from pivoter.pivot import ANNOTATION_INPUT, ANNOTATION_PACKAGE
from pivoter.pivot.naming import LABEL_MANAGED_BY

__all__ = [
    "KIND_SUBSCRIPTION",
    "AdoptionCheck",
    "AdoptionVerdict",
    "Holders",
    "NothingToCheck",
    "check_cluster",
    "check_namespace",
    "check_subscription",
    "crd_reasons",
    "extension_check",
    "holders",
    "ordered",
    "record_check",
    "subscription_check",
]

KIND_SUBSCRIPTION = "Subscription"
"""The ``kind`` of an entry about an OLM v0 Subscription (or the adoption that replaced it)."""
OLMV1_CRDS = (
    f"{CLUSTER_EXTENSION.resource.plural}.{olmv1.GROUP}",
    f"{CLUSTER_CATALOGS.plural}.{olmv1.GROUP}",
)
"""The CRDs that must be pivoter's copies for pivoter to serve ClusterExtensions."""

Holders = Mapping[str, frozenset[str]]
"""package -> the inputs (``Kind/name``) that install or selected it."""


class AdoptionVerdict(enum.Enum):
    """What ``pivoter adopt --check`` says of one operator."""

    ADOPTABLE = "Adoptable"
    REFUSED = "Refused"
    ADOPTED = "Adopted"
    IN_PROGRESS = "InProgress"
    CONFLICT = "Conflict"

    @property
    def blocks(self) -> bool:
        """Whether the operator cannot be taken over as things stand (the command exits 3)."""
        return self in (AdoptionVerdict.REFUSED, AdoptionVerdict.CONFLICT)


ORDER = (
    AdoptionVerdict.CONFLICT,
    AdoptionVerdict.REFUSED,
    AdoptionVerdict.IN_PROGRESS,
    AdoptionVerdict.ADOPTED,
    AdoptionVerdict.ADOPTABLE,
)
"""The order entries are printed in: what needs a person first."""


@dataclass(frozen=True, slots=True)
class AdoptionCheck:
    """The verdict on one operator, and every reason for it."""

    kind: str
    """:data:`KIND_SUBSCRIPTION`, or the input kind ``ClusterExtension``."""
    name: str
    """``namespace/name`` of a Subscription, the name of a ClusterExtension."""
    package: str
    installed: str
    """The installed CSV, or the bundle operator-controller recorded ("" when none)."""
    verdict: AdoptionVerdict
    reasons: tuple[str, ...] = ()
    """Why the verdict (empty for ``Adoptable``)."""
    notes: tuple[str, ...] = ()
    """What to know that does not change the verdict."""
    resolution: str = ""
    """The Resolution that adopts (or would adopt) a Subscription ("" for a ClusterExtension)."""

    def to_dict(self) -> dict[str, Any]:
        """The entry as ``-o json|yaml`` prints it."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "package": self.package,
            "installed": self.installed,
            "verdict": self.verdict.value,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
        }
        if self.resolution:
            out["resolution"] = self.resolution
        return out


class NothingToCheck(LookupError):
    """What was asked about does not exist; the message says what is missing."""


def ordered(entries: Iterable[AdoptionCheck]) -> list[AdoptionCheck]:
    """``entries`` in :data:`ORDER`, then by kind and name."""
    return sorted(entries, key=lambda e: (ORDER.index(e.verdict), e.kind, e.name))


# ----------------------------------------------------------------------------- pure verdicts


def holders(inputs: Mapping[str, Sequence[Object]], children: Sequence[Object]) -> Holders:
    """Which input installs or selected which package: every input's ``status.selection``
    (through its kind's reader), the children pivoter applied for any input (their
    annotations), and the package of every ClusterExtension operator-controller installed."""
    found: dict[str, set[str]] = {}

    def add(package: str, holder: str) -> None:
        if package:
            found.setdefault(package, set()).add(holder)

    for kind in INPUT_KINDS:
        for obj in inputs.get(kind.kind, ()):
            wanted = kind.wanted(obj.get("status") or {})
            if isinstance(wanted, SelectedPackages):
                for package in wanted.packages:
                    add(package, f"{kind.kind}/{obj['metadata']['name']}")
    for child in children:
        annotations = (child.get("metadata") or {}).get("annotations") or {}
        owner = str(annotations.get(ANNOTATION_INPUT) or "")
        if "/" in owner:
            add(str(annotations.get(ANNOTATION_PACKAGE) or ""), owner)
    for obj in inputs.get(CLUSTER_EXTENSION.kind, ()):
        if _installed_bundle(obj):
            add(_extension_package(obj), f"{CLUSTER_EXTENSION.kind}/{obj['metadata']['name']}")
    return {package: frozenset(names) for package, names in found.items()}


def _conflicts(package: str, found: Holders, own: str) -> list[str]:
    """Why another input stands in the way of ``own`` taking ``package`` over."""
    return [
        f"{other} installs package {package} already: two installers would fight over its "
        "objects; remove one of them first"
        for other in sorted(found.get(package, frozenset()) - {own})
    ]


def subscription_check(
    installed: InstalledOperator,
    found: Holders,
    *,
    resolution: Object | None = None,
    namespace_reasons: Sequence[str] = (),
    namespace_notes: Sequence[str] = (),
) -> AdoptionCheck:
    """The verdict on a Subscription that exists (``resolution``: the Resolution named as its
    adoption would be, if there is one)."""
    name = resolution_name(installed.namespace, installed.name)
    if resolution is not None:
        recorded = recorded_subscription(resolution)
        ours = (recorded.get("namespace"), recorded.get("name")) == (
            installed.namespace,
            installed.name,
        )
        step = _step(resolution)
        if not ours or not step:
            return _subscription_entry(
                installed,
                AdoptionVerdict.CONFLICT,
                name,
                reasons=[
                    f"Resolution {name} exists and is not the adoption of Subscription "
                    f"{installed.ref}: pivoter adopt would take that name; delete or rename it"
                ],
            )
        if step == handover.ADOPTED:
            return _subscription_entry(
                installed,
                AdoptionVerdict.CONFLICT,
                name,
                reasons=[
                    f"Resolution {name} adopted Subscription {installed.ref} already, yet the "
                    "Subscription exists again: OLM v0 and pivoter would both manage the "
                    "operator; delete the Subscription (pivoter adopt --undo hands it back)"
                ],
            )
        return record_check(resolution, subscription_exists=True)
    reasons = _conflicts(installed.package, found, f"{RESOLUTION.kind}/{name}")
    verdict = AdoptionVerdict.CONFLICT if reasons else AdoptionVerdict.ADOPTABLE
    reasons += [*namespace_reasons, *refusals(installed)]
    if reasons and verdict is AdoptionVerdict.ADOPTABLE:
        verdict = AdoptionVerdict.REFUSED
    notes = list(namespace_notes)
    if not verdict.blocks:
        notes.append(
            f"that a catalog pivoter reads offers {installed.installed_csv} is checked at the "
            "adoption's Planning step: if none does, the adoption stops there and nothing is "
            "changed"
        )
    return _subscription_entry(installed, verdict, name, reasons=reasons, notes=notes)


def _subscription_entry(
    installed: InstalledOperator,
    verdict: AdoptionVerdict,
    resolution: str,
    *,
    reasons: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> AdoptionCheck:
    return AdoptionCheck(
        kind=KIND_SUBSCRIPTION,
        name=installed.ref,
        package=installed.package,
        installed=installed.installed_csv,
        verdict=verdict,
        reasons=tuple(reasons),
        notes=tuple(notes),
        resolution=resolution,
    )


def _step(resolution: Object) -> str:
    return str(
        ((resolution.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ADOPTION) or ""
    )


def record_check(resolution: Object, *, subscription_exists: bool = False) -> AdoptionCheck:
    """The verdict on an adoption a Resolution records (its Subscription is gone from the
    adoption's second step on; then only the daemon's adoption controller drives it on, as
    ``pivoter adopt`` starts from the Subscription)."""
    metadata = resolution.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    name = str(metadata.get("name") or "")
    recorded = recorded_subscription(resolution)
    where = f"{recorded.get('namespace', '')}/{recorded.get('name', '')}"
    package = str((recorded.get("spec") or {}).get("name") or "")
    csv = str(annotations.get(ANNOTATION_CSV) or "")
    step = _step(resolution)
    if step == handover.ADOPTED:
        verdict = AdoptionVerdict.ADOPTED
        reasons = [f"Resolution {name} records the adoption of {csv or where} as {step}"]
    else:
        verdict = AdoptionVerdict.IN_PROGRESS
        message = str(annotations.get(handover.ANNOTATION_MESSAGE) or "")
        finish = (
            f"pivoter adopt --subscription {where} (or pivoter run --adopt-olmv0) finishes it"
            + (
                ""
                if subscription_exists
                else " (the Subscription is gone already: from the Resolution)"
            )
        )
        reasons = [
            f"Resolution {name} records the adoption at step {step or '(none)'}"
            + (f": {message}" if message else "")
            + f"; {finish}"
        ]
    return AdoptionCheck(
        kind=KIND_SUBSCRIPTION,
        name=where,
        package=package,
        installed=csv,
        verdict=verdict,
        reasons=tuple(reasons),
        resolution=name,
    )


def crd_reasons(crds: Mapping[str, Object | None]) -> list[str]:
    """Why pivoter does not serve OLM v1's APIs, from its two CRDs (None: not installed): each
    must be pivoter's copy, which carries :data:`pivoter.apis.olmv1.ANNOTATION_CRD_SOURCE`."""
    reasons = []
    for name, crd in sorted(crds.items()):
        if crd is None:
            reasons.append(
                f"the CRD {name} is not installed: pivoter serves OLM v1's APIs with its own "
                "crds/olmv1/ (docs/olm-v1.md)"
            )
            continue
        annotations = (crd.get("metadata") or {}).get("annotations") or {}
        if olmv1.ANNOTATION_CRD_SOURCE not in annotations:
            reasons.append(
                f"the CRD {name} is OLM v1's own (no {olmv1.ANNOTATION_CRD_SOURCE} annotation): "
                "operator-controller serves ClusterExtensions; apply pivoter's crds/olmv1/ over "
                "it and stop operator-controller and catalogd (docs/olm-v1.md)"
            )
    return reasons


def _installed_bundle(obj: Object) -> tuple[str, str] | None:
    """``status.install.bundle``'s name and version, when operator-controller (or pivoter)
    recorded one."""
    install = (obj.get("status") or {}).get("install")
    bundle = install.get("bundle") if isinstance(install, Mapping) else None
    if not isinstance(bundle, Mapping):
        return None
    name, version = str(bundle.get("name") or ""), str(bundle.get("version") or "")
    return (name, version) if name and version else None


def _extension_package(obj: Object) -> str:
    """The package a ClusterExtension names ("" when its spec cannot be read)."""
    try:
        return ClusterExtensionView.parse(obj).catalog.package_name
    except FieldError:
        return ""


def extension_check(obj: Object, found: Holders, *, crds: Sequence[str]) -> AdoptionCheck:
    """The verdict on a ClusterExtension (``crds``: :func:`crd_reasons` of the cluster)."""
    name = str(obj["metadata"]["name"])
    bundle = _installed_bundle(obj)
    try:
        view = ClusterExtensionView.parse(obj)
    except FieldError as exc:
        return _extension_entry(
            obj, "", AdoptionVerdict.REFUSED, [f"ClusterExtension {name}: {exc}"]
        )
    package = view.catalog.package_name
    record = Record.from_status(obj.get("status"))
    if record.active is not None:
        return _extension_entry(
            obj,
            package,
            AdoptionVerdict.ADOPTED,
            [f"pivoter manages it: ResolveSet revision {record.active} is active"],
        )
    if record.pivoting or record.last_attempted is not None:
        phase = record.pivot.phase.value if record.pivot is not None else "recorded"
        return _extension_entry(
            obj,
            package,
            AdoptionVerdict.IN_PROGRESS,
            [
                f"pivoter is taking it over: the pivot to ResolveSet revision "
                f"{record.last_attempted} is {phase}; no revision is active yet"
            ],
        )
    conflicts = _conflicts(package, found, f"{CLUSTER_EXTENSION.kind}/{name}")
    reasons = list(conflicts)
    if obj["metadata"].get("deletionTimestamp"):
        reasons.append(f"ClusterExtension {name} is being deleted")
    if bundle is None:
        reasons.append(
            "operator-controller recorded no installed bundle (status.install.bundle is empty): "
            "there is nothing installed to take over; served by pivoter it would be installed "
            "anew"
        )
    reasons += crds
    annotate = (
        f'add the annotation {ANNOTATION_ADOPT_EXISTING}: "true": without it pivoter\'s '
        "children do not take over the objects operator-controller's Helm release owns"
    )
    if not view.adopt_existing and reasons:
        reasons.append(annotate)
    if conflicts:
        return _extension_entry(obj, package, AdoptionVerdict.CONFLICT, reasons)
    if reasons:
        return _extension_entry(obj, package, AdoptionVerdict.REFUSED, reasons)
    notes = [] if view.adopt_existing else [f"the one thing missing: {annotate}"]
    notes.append(
        "pivoter takes it over once pivoter run serves OLM v1's APIs (--olmv1=auto does when no "
        "operator-controller or catalogd runs) and a ClusterCatalog offers the installed bundle"
    )
    return _extension_entry(obj, package, AdoptionVerdict.ADOPTABLE, [], notes)


def _extension_entry(
    obj: Object,
    package: str,
    verdict: AdoptionVerdict,
    reasons: Sequence[str],
    notes: Sequence[str] = (),
) -> AdoptionCheck:
    bundle = _installed_bundle(obj)
    return AdoptionCheck(
        kind=CLUSTER_EXTENSION.kind,
        name=str(obj["metadata"]["name"]),
        package=package,
        installed=f"{bundle[0]} ({bundle[1]})" if bundle else "",
        verdict=verdict,
        reasons=tuple(reasons),
        notes=tuple(notes),
    )


# ----------------------------------------------------------------------------- reads


def _list(kube: Kube, resource: Resource, *, label_selector: str = "") -> list[Object]:
    """Every object of ``resource`` in the cluster (none when its CRD is not installed)."""
    try:
        return kube.list(resource, label_selector=label_selector)[0]
    except NotFound:
        return []


def _crd(kube: Kube, name: str) -> Object | None:
    try:
        return kube.get(CRDS, name)
    except NotFound:
        return None


@dataclass(frozen=True, slots=True)
class _Pivoter:
    """What pivoter's side holds, read once: every input by kind, and the children of all."""

    inputs: Mapping[str, Sequence[Object]]
    found: Holders

    @classmethod
    def read(cls, kube: Kube) -> _Pivoter:
        inputs = {kind.kind: _list(kube, kind.resource) for kind in INPUT_KINDS}
        children = _list(kube, BUNDLE_DEPLOYMENTS, label_selector=f"{LABEL_MANAGED_BY}=pivoter")
        return cls(inputs, holders(inputs, children))

    @property
    def resolutions(self) -> dict[str, Object]:
        """Every Resolution, by name."""
        return {str(r["metadata"]["name"]): r for r in self.inputs.get(RESOLUTION.kind, ())}

    def records(self, namespace: str = "") -> list[Object]:
        """The adoption Resolutions (of OLM v0 namespace ``namespace``; "": of all)."""
        return [
            r
            for r in self.resolutions.values()
            if (label := ((r["metadata"].get("labels") or {}).get(LABEL_ADOPTED_FROM)))
            and (not namespace or label == namespace)
            and recorded_subscription(r)
        ]

    def extensions(self, kube: Kube) -> list[AdoptionCheck]:
        """The verdict on every ClusterExtension (the CRDs are read only when there is one)."""
        extensions = self.inputs.get(CLUSTER_EXTENSION.kind, ())
        if not extensions:
            return []
        crds = crd_reasons({name: _crd(kube, name) for name in OLMV1_CRDS})
        return [extension_check(obj, self.found, crds=crds) for obj in extensions]


def _unstarted(
    found: NamespaceSurvey,
    pivoter: _Pivoter,
    *,
    namespace_reasons: Sequence[str] = (),
    namespace_notes: Sequence[str] = (),
    neighbours: Sequence[InstalledOperator] | None = None,
) -> tuple[list[AdoptionCheck], set[str]]:
    """The verdicts on a namespace's Subscriptions, and the Resolutions they covered
    (``neighbours``: every installed operator of the namespace, when ``found`` holds fewer)."""
    resolutions = pivoter.resolutions
    entries, covered = [], set()
    around = list(neighbours if neighbours is not None else found.installed)
    for installed in found.installed:
        name = resolution_name(installed.namespace, installed.name)
        covered.add(name)
        # Adopted with the dependencies OLM v0 installed for it (pivoter.olmv0.groups).
        group = groups.group_of(installed, around)
        held = groups.held_back_by(group, around)
        reasons = [*namespace_reasons, *(held if neighbours is not None else [])]
        reasons += [r for member in group[1:] for r in refusals(member)]
        notes = list(namespace_notes)
        if held and neighbours is None:
            # --olm-namespace and --all adopt a dependency with what requires it.
            notes.append("adopted with the group of what requires it (--olm-namespace)")
        if len(group) > 1:
            notes.append(
                "adopted with the dependencies OLM v0 installed for it: Subscription "
                + ", Subscription ".join(m.name for m in group[1:])
            )
        entries.append(
            subscription_check(
                installed,
                pivoter.found,
                resolution=resolutions.get(name),
                namespace_reasons=reasons,
                namespace_notes=notes,
            )
        )
    return entries, covered


def check_subscription(kube: Kube, namespace: str, name: str) -> list[AdoptionCheck]:
    """The verdict on Subscription ``namespace/name``, or on the adoption that replaced it;
    raises :class:`NothingToCheck` when there is neither."""
    pivoter = _Pivoter.read(kube)
    try:
        found = survey(kube, namespace, name)
    except NotFound:
        record = pivoter.resolutions.get(resolution_name(namespace, name))
        recorded = recorded_subscription(record) if record is not None else {}
        if record is None or (recorded.get("namespace"), recorded.get("name")) != (
            namespace,
            name,
        ):
            raise NothingToCheck(
                f"Subscription {namespace}/{name} does not exist and no Resolution records its "
                "adoption"
            ) from None
        return [record_check(record)]
    return _unstarted(found, pivoter, neighbours=survey(kube, namespace).installed)[0]


def check_namespace(kube: Kube, namespace: str) -> list[AdoptionCheck]:
    """The verdicts on every Subscription of ``namespace`` as ``--olm-namespace`` would adopt
    them, and on the adoptions recorded for it whose Subscription is gone; raises
    :class:`NothingToCheck` when there is nothing of either."""
    pivoter = _Pivoter.read(kube)
    found = survey(kube, namespace)
    records = pivoter.records(namespace)
    if not found.installed and not records:
        raise NothingToCheck("; ".join(namespace_refusals(found)))
    reasons = namespace_refusals(found) if found.installed else []
    entries, covered = _unstarted(found, pivoter, namespace_reasons=reasons)
    entries += [record_check(r) for r in records if r["metadata"]["name"] not in covered]
    return ordered(entries)


def _surveys(kube: Kube) -> list[NamespaceSurvey]:
    """:func:`pivoter.olmv0.survey.survey` of every namespace with a Subscription, from one list
    of each kind across the cluster (OLM v0's copies of CSVs are left out by the API server)."""
    subscriptions = _list(kube, SUBSCRIPTIONS)
    if not subscriptions:
        return []
    by_namespace: dict[str, dict[str, list[Object]]] = {}
    for kind, items in (
        ("subscriptions", subscriptions),
        ("groups", _list(kube, OPERATOR_GROUPS)),
        ("plans", _list(kube, INSTALL_PLANS)),
        ("csvs", _list(kube, CSVS, label_selector=f"!{COPIED_LABEL}")),
    ):
        for obj in items:
            namespace = str(obj["metadata"].get("namespace") or "")
            by_namespace.setdefault(namespace, {}).setdefault(kind, []).append(obj)
    surveys = []
    for namespace, objects in sorted(by_namespace.items()):
        subs = objects.get("subscriptions", [])
        if not subs:
            continue
        csvs = {str(c["metadata"]["name"]): c for c in objects.get("csvs", [])}
        installed = []
        for sub in sorted(subs, key=lambda s: str(s["metadata"]["name"])):
            status = sub.get("status") or {}
            current = str(status.get("installedCSV") or status.get("currentCSV") or "")
            sub_name = str(sub["metadata"]["name"])
            installed.append(
                InstalledOperator(
                    namespace=namespace,
                    subscription=sub,
                    csv=csvs.get(current) if current else None,
                    operator_groups=tuple(objects.get("groups", [])),
                    install_plans=tuple(
                        p for p in objects.get("plans", []) if _owned_by(p, sub_name)
                    ),
                )
            )
        named = {i.installed_csv for i in installed}
        unsubscribed = tuple(sorted(n for n in csvs if n not in named))
        surveys.append(NamespaceSurvey(namespace, tuple(installed), unsubscribed))
    return surveys


def _owned_by(plan: Object, subscription: str) -> bool:
    owners = (plan.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("kind") == KIND_SUBSCRIPTION and o.get("name") == subscription for o in owners)


def check_cluster(kube: Kube) -> list[AdoptionCheck]:
    """The verdicts on every Subscription and every ClusterExtension of the cluster, and on the
    adoptions recorded whose Subscription is gone. A namespace that cannot be adopted as a whole
    (``--olm-namespace``) is a note on its Subscriptions: each may still be adopted alone."""
    pivoter = _Pivoter.read(kube)
    entries: list[AdoptionCheck] = []
    covered: set[str] = set()
    for found in _surveys(kube):
        notes = [
            f"adopting namespace {found.namespace} as a whole (--olm-namespace) is refused: "
            f"{reason}; its Subscriptions can be adopted one by one (--subscription)"
            for reason in namespace_refusals(found)
        ]
        more, names = _unstarted(found, pivoter, namespace_notes=notes)
        entries += more
        covered |= names
    entries += [record_check(r) for r in pivoter.records() if r["metadata"]["name"] not in covered]
    entries += pivoter.extensions(kube)
    return ordered(entries)
