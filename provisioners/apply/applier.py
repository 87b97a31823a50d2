"""Server-side apply of a bundle's objects, in dependency order, with ownership and pruning.

One :class:`Applier` acts for one owner (a BundleDeployment): it applies with that owner's field
manager, labels every object with the owner, refuses to take over objects someone else manages
(unless asked to adopt them), waits for CRDs to be Established before their custom resources, and
prunes what a new revision of the content no longer has. Callers: the BundleDeployment controller
and the grouped-pivot provisioner.

Objects go in phases (:func:`~provisioners.apply.objects.install_phases`: Namespaces, CRDs,
RBAC, ..., custom resources last). Within a phase, every object is looked up and its ownership
checked before any is applied, then up to :data:`APPLY_CONCURRENCY` apply requests run at once;
a failure stops the apply after its phase, with every object that was applied recorded. CRDs
are waited for (Established) just before the phase of their custom resources, so the phases in
between are applied meanwhile, and in any case before :meth:`Applier.apply` returns.

Asked for ``changes`` (a plan's dry run), the applier compares each object that exists with the
object the API server answered (:mod:`provisioners.apply.fieldchanges`); it reads the live objects
through the same lookups as the ownership check (:class:`~provisioners.apply.ownership.Owners`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

from provisioners.apply.fieldchanges import FieldChanges, field_changes
from provisioners.apply.kubeapi import (
    APPLY_PATCH,
    ApiResponse,
    Forbidden,
    KubeAPI,
    KubeError,
    NotFound,
    Resource,
)
from provisioners.apply.objects import (
    CRD_API_VERSION,
    CRD_KIND,
    JSONObject,
    ObjectRef,
    crd_kinds,
    install_order,
    install_phases,
    owner_of,
    ref_of,
    with_owner_labels,
)
from provisioners.apply.ownership import Owners

APPLY_CONCURRENCY = 4
"""Objects of one install phase (e.g. the ConfigMaps) applied at a time: the round trips
overlap, and the API server is not flooded by one bundle."""

CRD_POLICY_KEEP = "Keep"
CRD_POLICY_DELETE = "Delete"


class ApplyError(Exception):
    """Applying failed for one object; ``ref`` names it and the message says why."""

    def __init__(self, message: str, ref: ObjectRef | None = None) -> None:
        super().__init__(f"{ref}: {message}" if ref else message)
        self.ref = ref
        self.detail = message
        self.applied: list[ObjectRef] = []
        """What :meth:`Applier.apply` had applied before it failed (to be pruned later)."""


class OwnershipConflict(ApplyError):
    """The object exists and is managed by someone else; set ``adoptExisting`` to take it over."""


@dataclass(frozen=True, slots=True)
class Owner:
    """Who the applied objects belong to (its kind and name label them)."""

    kind: str
    name: str

    @property
    def field_manager(self) -> str:
        """The server-side apply field manager of this owner."""
        return f"pivoter/{self.kind.lower()}/{self.name}"[:128]


@dataclass(slots=True)
class ApplyResult:
    """What one apply did."""

    applied: list[ObjectRef] = field(default_factory=list)
    skipped: list[tuple[ObjectRef, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    objects: dict[ObjectRef, JSONObject] = field(default_factory=dict)
    """Each applied object as the API server stored it (not kept by a dry run)."""
    ownership_reads: int = 0
    """Requests sent to find who manages the objects, and with ``changes`` to read them (see
    :mod:`provisioners.apply.ownership`)."""
    changes: dict[ObjectRef, FieldChanges] = field(default_factory=dict)
    """With ``changes``: the fields the apply changes (would change, in a dry run) of each
    object that existed, for those it changes."""
    compared: int = 0
    """With ``changes``: how many applied objects existed (and were compared)."""
    unread: list[ObjectRef] = field(default_factory=list)
    """With ``changes`` and ``adopt``: objects the owner may not read (forbidden), whose
    changes are unknown."""


class _Job(NamedTuple):
    """One object of a phase, ready to send."""

    ref: ObjectRef
    resource: Resource
    body: JSONObject
    live: JSONObject | None
    """The object as it is, when it exists and the apply reports its changes."""


@dataclass(slots=True)
class PruneResult:
    """What one prune did."""

    deleted: list[ObjectRef] = field(default_factory=list)
    kept: list[tuple[ObjectRef, str]] = field(default_factory=list)


class Applier:
    """Applies and prunes the objects of one owner through one :class:`KubeAPI`."""

    def __init__(
        self,
        api: KubeAPI,
        owner: Owner,
        *,
        default_namespace: str = "",
        crd_timeout: float = 60.0,
        poll_interval: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = APPLY_CONCURRENCY,
    ) -> None:
        self.api = api
        self.owner = owner
        self.default_namespace = default_namespace
        self.crd_timeout = crd_timeout
        self.poll_interval = poll_interval
        self.concurrency = concurrency
        """How many objects of one phase are applied at a time."""
        self._sleep = sleep

    # -- apply -------------------------------------------------------------------------------

    def apply(
        self,
        objects: Sequence[JSONObject],
        *,
        adopt: bool = False,
        dry_run: bool = False,
        owned: Collection[ObjectRef] = (),
        changes: bool = False,
    ) -> ApplyResult:
        """Apply ``objects`` in dependency order; raise :class:`ApplyError` at the first failure.

        An object that exists under another owner is refused unless ``adopt``; objects in
        ``owned`` (the owner's inventory: applied by it before) are not checked.

        With ``dry_run`` every object goes through the API server's admission and validation but
        nothing is stored; custom resources of CRDs that are in the same set, and objects in
        Namespaces that are in the same set and do not exist yet (neither is created by a dry
        run), are reported as skipped.

        With ``changes`` every object is read first (those in ``owned`` and, with ``adopt``, all
        of them too: a GET each, or one list per collection that holds many objects of the set,
        see :mod:`provisioners.apply.ownership`), and :attr:`ApplyResult.changes` says which
        fields of the existing ones the apply changes.
        """
        result = ApplyResult()
        ordered = install_order(objects)
        self._check_unique(ordered)
        defined_here = crd_kinds(ordered)
        new_namespaces = self._new_namespaces(ordered) if dry_run else set()
        owners = Owners(self.api, ordered, owned, keep=changes) if changes or not adopt else None
        try:
            self._apply_all(
                ordered,
                result,
                owners=owners,
                adopt=adopt,
                changes=changes,
                dry_run=dry_run,
                defined_here=defined_here,
                new_namespaces=new_namespaces,
            )
        except ApplyError as exc:
            exc.applied = list(result.applied)
            raise
        finally:
            result.ownership_reads = owners.requests if owners is not None else 0
        return result

    def _apply_all(
        self,
        ordered: list[JSONObject],
        result: ApplyResult,
        *,
        owners: Owners | None,
        adopt: bool,
        changes: bool,
        dry_run: bool,
        defined_here: set[tuple[str, str]],
        new_namespaces: set[str],
    ) -> None:
        # CRDs applied but not yet seen Established: only their custom resources wait for them
        # (the last phase), so the phases in between are applied meanwhile.
        unestablished: list[ObjectRef] = []
        for phase in install_phases(ordered):
            if unestablished and _has_custom_resources(phase, defined_here):
                self._wait_all_established(unestablished)
            jobs: list[_Job] = []
            for obj in phase:
                ref = ref_of(obj)
                try:
                    resource = self.api.resource(ref.api_version, ref.kind)
                except NotFound as exc:
                    if dry_run and (ref.group, ref.kind) in defined_here:
                        why = "its CRD is part of this set and not created yet"
                        result.skipped.append((ref, why))
                        continue
                    raise ApplyError(exc.message, ref) from exc
                obj_ref, body = self._prepare(obj, ref, resource)
                if obj_ref.namespace in new_namespaces:
                    why = "its Namespace is part of this set and not created yet"
                    result.skipped.append((obj_ref, why))
                    continue
                live = None
                if owners is not None and changes:
                    try:
                        live = owners.existing(obj_ref, resource, declared_namespace=ref.namespace)
                    except Forbidden:
                        if not adopt:
                            raise  # the ownership check needs the read: as without changes
                        result.unread.append(obj_ref)
                if owners is not None and not adopt:
                    me = (self.owner.kind, self.owner.name)
                    holder = owners.holder(obj_ref, resource, me, declared_namespace=ref.namespace)
                    if holder is not None:
                        raise OwnershipConflict(
                            f"already exists and is managed by {holder}; delete it, or set "
                            "adoptExisting: true on the BundleDeployment to take it over",
                            obj_ref,
                        )
                jobs.append(_Job(obj_ref, resource, body, live))
            self._apply_phase(jobs, result, dry_run=dry_run)
            if not dry_run:
                unestablished += [job.ref for job in jobs if job.ref.kind == CRD_KIND]
        # An apply returns with its CRDs served, custom resources or not.
        self._wait_all_established(unestablished)

    def _wait_all_established(self, crds: list[ObjectRef]) -> None:
        """Wait for each CRD of ``crds`` to be Established; empty ``crds`` as they are."""
        while crds:
            self._wait_established(crds[0])
            crds.pop(0)

    def _apply_phase(
        self,
        jobs: list[_Job],
        result: ApplyResult,
        *,
        dry_run: bool,
    ) -> None:
        """Apply the objects of one phase, up to :attr:`concurrency` at a time; record what was
        applied (in the given order), and what changed in those that existed, and raise the
        first failure once all have answered."""

        def one(job: _Job) -> ApiResponse | ApplyError:
            try:
                return self._apply_one(job.ref, job.resource, job.body, dry_run=dry_run)
            except ApplyError as exc:
                return exc

        workers = min(self.concurrency, len(jobs))
        if workers <= 1:
            answers = [one(job) for job in jobs]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="apply") as pool:
                answers = list(pool.map(one, jobs))
        failure: ApplyError | None = None
        for job, answer in zip(jobs, answers, strict=True):
            if isinstance(answer, ApplyError):
                failure = failure or answer
                continue
            ref = job.ref
            result.applied.append(ref)
            result.warnings.extend(f"{ref}: {w}" for w in answer.warnings)
            if not dry_run:
                result.objects[ref] = answer.body
            if job.live is not None:
                result.compared += 1
                changed = field_changes(job.live, answer.body)
                if changed:
                    result.changes[ref] = changed
        if failure is not None:
            raise failure

    def _new_namespaces(self, objects: Iterable[JSONObject]) -> set[str]:
        """The Namespaces among ``objects`` that do not exist yet."""
        missing = set()
        for obj in objects:
            if obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace":
                name = str((obj.get("metadata") or {}).get("name") or "")
                try:
                    self.api.request("GET", f"/api/v1/namespaces/{name}")
                except NotFound:
                    missing.add(name)
        return missing

    def _check_unique(self, objects: Iterable[JSONObject]) -> None:
        seen: set[ObjectRef] = set()
        for obj in objects:
            try:
                ref = ref_of(obj)
            except ValueError as exc:
                raise ApplyError(str(exc)) from exc
            if ref in seen:
                raise ApplyError("the bundle contains this object twice", ref)
            seen.add(ref)

    def _prepare(
        self, obj: JSONObject, ref: ObjectRef, resource: Resource
    ) -> tuple[ObjectRef, JSONObject]:
        body = with_owner_labels(obj, self.owner.kind, self.owner.name)
        metadata = dict(body["metadata"])
        if resource.namespaced:
            namespace = ref.namespace or self.default_namespace
            if not namespace:
                raise ApplyError("namespaced object without a namespace", ref)
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
            namespace = ""
        # Server-managed fields must not be sent in an apply configuration.
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
            metadata.pop(key, None)
        body["metadata"] = metadata
        body.pop("status", None)
        return ObjectRef(ref.api_version, ref.kind, namespace, ref.name), body

    def _apply_one(
        self, ref: ObjectRef, resource: Resource, body: JSONObject, *, dry_run: bool
    ) -> ApiResponse:
        query = [("fieldManager", self.owner.field_manager), ("force", "true")]
        if dry_run:
            query.append(("dryRun", "All"))
        try:
            response = self.api.send(
                "PATCH",
                resource.path(ref.namespace, ref.name),
                query=query,
                body=body,
                content_type=APPLY_PATCH,
            )
        except KubeError as exc:
            raise ApplyError(exc.message, ref) from exc
        return response

    def _wait_established(self, ref: ObjectRef) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{ref.name}"
        deadline = time.monotonic() + self.crd_timeout
        last = "no status yet"
        while True:
            crd = self.api.request("GET", path)
            conditions = {
                c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []
            }
            names = conditions.get("NamesAccepted", {})
            if names.get("status") == "False":
                raise ApplyError(f"CRD names not accepted: {names.get('message', '')}", ref)
            established = conditions.get("Established", {})
            if established.get("status") == "True":
                for version in crd["spec"].get("versions", []):
                    self.api.forget(f"{crd['spec']['group']}/{version['name']}")
                return
            last = str(established.get("message") or last)
            if time.monotonic() >= deadline:
                raise ApplyError(f"CRD not Established after {self.crd_timeout:.0f}s ({last})", ref)
            self._sleep(self.poll_interval)

    # -- prune -------------------------------------------------------------------------------

    def prune(
        self,
        previous: Iterable[ObjectRef],
        keep: Iterable[ObjectRef],
        *,
        crd_policy: str = CRD_POLICY_KEEP,
    ) -> PruneResult:
        """Delete what ``previous`` had and ``keep`` no longer has, if this owner still owns it.

        A CRD whose custom resources still exist is kept under the ``Keep`` policy (deleting it
        would delete the users' data with it).
        """
        result = PruneResult()
        keep_set = set(keep)
        # Custom resources and workloads go before the CRDs and namespaces they live in.
        for ref in sorted(set(previous) - keep_set, key=_prune_rank):
            try:
                resource = self.api.resource(ref.api_version, ref.kind)
            except NotFound:
                continue  # the kind is gone (its CRD was deleted): so is the object
            path = resource.path(ref.namespace, ref.name)
            try:
                existing = self.api.request("GET", path)
            except NotFound:
                continue
            if owner_of(existing) != (self.owner.kind, self.owner.name):
                result.kept.append((ref, "no longer owned by this owner"))
                continue
            if ref.kind == CRD_KIND and crd_policy == CRD_POLICY_KEEP:
                count = self._count_custom_resources(existing)
                if count:
                    result.kept.append(
                        (ref, f"{count}+ custom resources still exist (crdDeletionPolicy: Keep)")
                    )
                    continue
            try:
                self.api.request("DELETE", path, body={"propagationPolicy": "Background"})
            except NotFound:
                continue
            result.deleted.append(ref)
        return result

    def _count_custom_resources(self, crd: JSONObject) -> int:
        group = crd["spec"]["group"]
        plural = crd["spec"]["names"]["plural"]
        for version in crd["spec"].get("versions", []):
            if not version.get("served"):
                continue
            try:
                listing = self.api.request(
                    "GET", f"/apis/{group}/{version['name']}/{plural}", query=[("limit", "1")]
                )
            except NotFound:
                continue
            items = len(listing.get("items", []))
            remaining = int(listing.get("metadata", {}).get("remainingItemCount") or 0)
            return items + remaining
        return 0


def _has_custom_resources(phase: Iterable[JSONObject], defined_here: set[tuple[str, str]]) -> bool:
    """Whether ``phase`` holds an object of a kind that a CRD of the same set defines."""
    for obj in phase:
        ref = ref_of(obj)
        if (ref.group, ref.kind) in defined_here:
            return True
    return False


def _prune_rank(ref: ObjectRef) -> tuple[int, ObjectRef]:
    if ref.kind == "Namespace":
        return (2, ref)
    if ref.kind == CRD_KIND and ref.api_version == CRD_API_VERSION:
        return (1, ref)
    return (0, ref)
