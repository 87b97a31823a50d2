"""The pivoter loop for one input: resolve, record a revision, decide, pivot, observe.

Shared by the controllers of every input kind, which turn their object into an
:class:`~pivoter.inputs.spec.InputSpec`, call :meth:`InputEngine.reconcile` and render the
returned :class:`Outcome` as their own status. One reconcile:

1. a **pivot in progress** is carried on (:class:`pivoter.pivot.PivotMachine`), nothing else
   unless it ends (then steps 2-4 follow against the new active revision, so the status the
   pass writes says what is newer); otherwise steps 2-4 run under
   :data:`~pivoter.inputs.held.CLAIMS`, one input at a time;
2. **conflict**: a requested package already installed by another input stops here;
3. the **target**: the pinned revision, or a new resolution from the selected catalogs with the
   active revision as installed state and what the other inputs selected as held choices
   (:mod:`pivoter.inputs.held`: shared dependencies are theirs, never a second copy),
   written as a revision (an identical selection writes nothing);
4. **decide** (:func:`pivoter.inputs.decide.decide`, a pure function of what this pass
   read): already active (observe the children; re-create one deleted by hand), blocked (the
   revision failed, within its backoff, and no retry was asked), paused, waiting for a Manual
   approval, or start a pivot; then the engine carries the decision out;

Revisions beyond the history limit are collected by their own controller
(:mod:`pivoter.inputs.collector`), only while the input is settled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from pivoter.catalogs import CatalogCache
from pivoter.inputs import actions, held, takeover
from pivoter.inputs import catalogs as catalog_selection
from pivoter.inputs.actions import Pass
from pivoter.inputs.decide import (
    Situation,
    adopts,
    decide,
    stopped,
    targets_active,
)
from pivoter.inputs.facts import (
    Freshness,
    FreshnessState,
    ResolutionState,
    Resolved,
    progress_of,
)
from pivoter.inputs.metrics import InputMetrics
from pivoter.inputs.objectplan import objects_section
from pivoter.inputs.outcome import Draft, Outcome
from pivoter.inputs.passfacts import (
    bundles_text,
    keep_installed,
    meets,
    recreated,
    resolved_note,
)
from pivoter.inputs.record import Record
from pivoter.inputs.relevance import Relevance
from pivoter.inputs.resolve import ResolveProblem, Selection, resolve
from pivoter.inputs.spec import InputSpec
from pivoter.inputs.targets import RevisionsWith
from pivoter.kube import Kube
from pivoter.pivot import (
    ANNOTATION_BUNDLE,
    ANNOTATION_VERSION,
    Children,
    ChildState,
    FailureCause,
    Phase,
    PivotJob,
    PivotMachine,
    PivotRecord,
    Preparer,
)
from pivoter.resolvesets import Revision, RevisionStore
from provisioners.errors import ProvisionerError
from provisioners.verification import ImageNotVerifiedError
from resolver.resolveset import ResolveSet, ResolveSetError
from resolver.rules.inputs import CatalogInput, Installed, PackageRequest
from resolver.rules.reads import Reads
from resolver.rules.scope import scope

__all__ = ["InputEngine", "Persist"]

log = logging.getLogger(__name__)

Persist = Callable[[Record], None]

OBSERVE_POLL = 300.0
"""A safety net only: outside a pivot, a child's status change (Healthy, Installed, deleted)
queues its input through the child watch, so an input with an unhealthy child is not
re-resolved on a timer (each pass runs the resolver)."""
PLAN_POLL = 2.0
"""How often a plan whose bundles are still unpacking is looked at again (the Bundle watch
usually comes first)."""
PIN_RETRY_SECONDS = 15.0
"""How soon a selection whose images could not be pinned or verified is tried again (a
signature pushed or a key added fixes it, and nothing else queues the input)."""


@dataclass
class InputEngine:
    """Drives inputs through resolution and grouped pivots (see the module docstring)."""

    kube: Kube
    cache: CatalogCache
    store: RevisionStore
    preparer: Preparer = field(kw_only=True)
    """Unpacks, orders and dry-runs the bundles of a pivot (and of a plan) before they apply."""
    clock: Callable[[], float] = time.time
    failure_grace: float = 5.0
    on_transition: Callable[[PivotRecord], None] | None = None
    """Test hook (:class:`pivoter.daemon.hooks.Hooks`): called after each transition, which is
    then written at once (without it, a forward transition is written with the pass's status,
    see ``_continue``), so a test that stops the daemon there finds it in status."""
    metrics: InputMetrics | None = None
    claims: AbstractContextManager[Any] = held.CLAIMS
    """Held from reading the other inputs' holdings until a started pivot is recorded."""
    children_cache: held.ChildrenSource | None = None
    """The daemon's shared BundleDeployment cache, where the other inputs' children are read
    (None: listed from the API server on every pass)."""
    revisions_cache: held.CachedObject | None = None
    """The daemon's shared cache of ResolveSet revision ConfigMaps, where the other inputs'
    pivot targets are read (None: from the API server on every pass)."""
    inputs_cache: held.InputsSource | None = None
    """The daemon's shared caches of the input kinds, where the other inputs' pivots in
    progress are found (None: listed from the API server on every pass)."""
    children_by_package: held.ChildrenWith | None = None
    """The cached children that install a package (an index of ``children_cache``): with
    ``revisions_with``, a resolving pass reads only the holdings of the packages it can meet
    (None: every holding)."""
    revisions_with: RevisionsWith | None = None
    """The cached revision ConfigMaps whose ResolveSet has a package (an index of
    ``revisions_cache``, :func:`pivoter.inputs.targets.revision_packages`)."""
    relevance: Relevance | None = None
    """Notes what each resolution read, so that a catalog change queues only the inputs it
    concerns (None: every change concerns every input)."""

    def reconcile(
        self,
        obj: Mapping[str, Any],
        spec: InputSpec,
        record: Record,
        persist: Persist,
        out: Draft | None = None,
    ) -> Outcome:
        """One pass of the loop for the input ``obj``; ``persist`` writes ``record`` to status.
        The pass fills ``out`` (a new one by default) as it goes, so that a caller still has the
        events of what happened before a failure; the facts it found are returned frozen."""
        out = out if out is not None else Draft(record=record)
        if self.relevance is not None:
            self.relevance.begin(spec.ref.name, spec.generation)
        children = Children(self.kube, spec.ref, primary=spec.primary_package)
        # Every path (a pivot in progress, a conflict, a pin) first checks that the active
        # revision is still there: a revision deleted or edited by hand is never reported as
        # active (``record.active`` is cleared, so no status write names it).
        active = self._active(spec, record, out, children)
        checked = record.active
        if not record.pivoting and not self._decide(
            Pass(obj, spec, record, out, persist, children, active)
        ):
            self._ended(spec, record, out, active if record.active == checked else None)
            return out.outcome()
        self._continue(obj, spec, record, out, persist=persist, children=children)
        if not record.pivoting:
            # The pivot ended in this pass. What is newer than what it installed (UpToDate),
            # and whether the catalogs moved on while it ran, only a resolution against the
            # new active revision says: this pass does it now, as the next one would, rather
            # than leave status saying "being installed" until something queues the input
            # again (its own status write does not).
            out.lost_active, out.requeue_after = None, None
            active = self._active(spec, record, out, children)
            checked = record.active
            p = Pass(obj, spec, record, out, persist, children, active)
            if self._decide(p):
                self._continue(obj, spec, record, out, persist=persist, children=children)
        self._ended(spec, record, out, active if record.active == checked else None)
        return out.outcome()

    def _decide(self, p: Pass) -> bool:
        """Steps 2 to 4 for a pass with no pivot in progress; True when a pivot was started."""
        # What the other inputs hold is read, resolved against and claimed (the pivot's record
        # written) by one input at a time, so two inputs never both select a package nobody
        # holds yet.
        with self.claims:
            started = self._resolve(p)
        for step in p.later:
            step()
        if started and self.on_transition is not None and p.record.pivot is not None:
            self.on_transition(p.record.pivot)
        return started

    def _ended(self, spec: InputSpec, record: Record, out: Draft, known: ResolveSet | None) -> None:
        """Record the active revision's document as the pass leaves it (read again only when
        the pass changed which revision is active)."""
        if out.resolved is not None:
            record.resolution = out.resolved.state
        if record.active is None:
            out.active_document = None
        else:
            out.active_document = known or self._document(spec, record.active)

    # -- decision: read the world, decide, act -----------------------------------------------------

    def _resolve(self, p: Pass) -> bool:
        """Steps 2 to 4 of the module docstring: read what the decision needs into a
        :class:`Situation`, :func:`decide`, and carry the decision out; True when a pivot was
        started (and its record persisted)."""
        # The other inputs' children and the targets of their pivots in progress: a package
        # either holds is another input's (a conflict when requested, a held choice otherwise).
        # Only the packages this pass can meet are read (resolver.rules.scope).
        requests, installed = self._resolution_state(p)
        packages = self._peer_packages(p, requests, installed)
        peers = held.with_pivot_targets(
            held.observe(
                self.kube,
                p.spec.ref,
                self.children_cache,
                packages=packages,
                by_package=self.children_by_package,
            ),
            self.kube,
            self.store,
            p.spec.ref,
            revisions=self.revisions_cache,
            inputs=self.inputs_cache,
            packages=packages,
            revisions_with=self.revisions_with,
        )
        situation = Situation(
            conflict=peers.conflict(p.spec.packages), lost_active=p.out.lost_active
        )
        target = None if situation.conflict else self._target(p, peers)
        if p.out.resolved is not None:
            # Persisted with the pass' first record write (a pivot's start), not only at its end.
            p.record.resolution = p.out.resolved.state
        if target is not None:
            p.out.selection = target[1]
            situation = self._situation(p, situation, *target, peers=peers)
            if adopts(situation):
                actions.adopt(p, target[0])
            if targets_active(situation):
                # Observed after the adoption: the children of the (new) active revision.
                missing = self.observe_active(p.spec, p.out, p.children, recreating=True)
                situation = replace(situation, missing=tuple(missing))
        decision = decide(situation)
        if target is None:
            actions.not_resolved(self, p, decision.action, situation.conflict)
            return False
        number, document = target
        return actions.act(self, p, decision, situation, number=number, target=document)

    def _situation(
        self, p: Pass, base: Situation, number: int, target: ResolveSet, *, peers: held.Peers
    ) -> Situation:
        """The facts :func:`decide` reads about the target revision ``number`` (all but the
        missing children, observed once the adoption is done)."""
        spec, record = p.spec, p.record
        return replace(
            base,
            target=number,
            active=record.active,
            installs_target=base.lost_active is not None and self._installs(p.children, target),
            retry_asked=self._retry_asked(spec, record),
            failed_revision=record.failed_revision,
            retry_at=record.retry_at(),
            now=self.clock(),
            dependency_conflict=peers.conflict([e.package for e in target.entries]),
            paused=spec.paused,
            manual=spec.approval == "Manual"
            and spec.pinned is None
            # The first revision of a takeover records what runs: nothing to approve.
            and not takeover.is_takeover(spec.takeover, record.active, target),
            approved=spec.approves(number, target.selection_hash),
        )

    def plan_objects(
        self,
        obj: Mapping[str, Any],
        spec: InputSpec,
        children: Children,
        *,
        target: ResolveSet,
        number: int,
        out: Draft,
    ) -> dict[str, Any]:
        """The objects section of the plan to ``number`` (computed once per selection)."""
        published = (obj.get("status") or {}).get("pendingPlan") or {}
        section = published.get("objects")
        if (
            published.get("selectionHash") == target.selection_hash
            and isinstance(section, dict)
            and "pending" not in section
            and "problem" not in section
        ):
            return section
        section, pending = objects_section(
            self.preparer, children, spec, owner=obj, target=target, revision=number
        )
        if pending or "problem" in section:
            # A problem may pass (a pull secret fixed, a catalog still loading): look again.
            out.requeue_after = PLAN_POLL
        return section

    # -- pivots ----------------------------------------------------------------------------------

    def start_pivot(self, children: Children, revision: int, previous: int | None) -> PivotRecord:
        """A new pivot record to ``revision`` (reverting to ``previous``)."""
        return self._machine(children).start(revision, previous)

    def _machine(self, children: Children) -> PivotMachine:
        return PivotMachine(
            children,
            self.preparer,
            clock=self.clock,
            failure_grace=self.failure_grace,
            on_transition=self.on_transition,
        )

    def _continue(
        self,
        obj: Mapping[str, Any],
        spec: InputSpec,
        record: Record,
        out: Draft,
        *,
        persist: Persist,
        children: Children,
    ) -> None:
        """Step 1 of the module docstring: one step of the pivot in progress (it stops when a
        revision it needs was deleted or modified by hand)."""
        pivot = record.pivot
        assert pivot is not None
        target = self._document(spec, pivot.revision)
        previous = self._document(spec, pivot.previous) if pivot.previous else None
        lost = stopped(pivot, target=target is not None, previous=previous is not None)
        if lost or target is None:
            # A lost target is the cause; a lost revision to go back to stops a rollback whose
            # cause stays the pivot's own.
            cause = pivot.cause if target is not None else FailureCause.REVISION_LOST
            record.pivot = pivot.to(Phase.FAILED, message=lost, cause=cause)
            self._finish(record)
            persist(record)
            out.progressing = progress_of(record.pivot)
            self.observe_active(spec, out, children)
            return
        out.selection = target

        def save(new: PivotRecord) -> None:
            record.pivot = new
            if new.phase.terminal:
                self._finish(record)
            if new.phase is Phase.ROLLING_BACK or self.on_transition is not None:
                persist(record)
            # Otherwise written with the pass's status (the record is part of it): the steps
            # of a pivot going forward are idempotent, so a pass that dies before that write
            # is carried on from the phase last written (tests/pivot/test_machine_units.py
            # resumes from every transition). A rollback is written before it acts: carried
            # on from a forward phase, the pivot would put the target's children back. Each
            # write was also an update event that queued the input again; a pivot made
            # about nine status writes.
            self._count_pivot(spec, new)

        plan = _pivot_plan(obj, spec, target, previous)
        step = self._machine(children).run(plan, pivot, save)
        out.events.extend(step.events)
        out.reports = step.reports
        out.requeue_after = step.requeue_after
        current = record.pivot
        assert current is not None
        if current.phase.terminal:
            self.observe_active(spec, out, children)
        else:
            self._report_pivoting(spec, out, children, target, record.recreating)
        out.progressing = progress_of(current)

    def _report_pivoting(
        self,
        spec: InputSpec,
        out: Draft,
        children: Children,
        target: ResolveSet,
        recreating: tuple[str, ...],
    ) -> None:
        """The children of a pivot still in progress, as the status shows them (``recreating``:
        those deleted by hand that it re-creates)."""
        if not out.reports:
            # Preparing reports no child: say how the children installed now are doing (a
            # missing one is named while the pivot re-creates it), not "nothing installed".
            requeue = out.requeue_after
            self.observe_active(spec, out, children, recreating=True)
            out.requeue_after = requeue
        out.reports = recreated(out.reports, recreating, target)

    def _finish(self, record: Record) -> None:
        """Record how the pivot ended: the active revision, or the failure and its backoff."""
        pivot = record.pivot
        assert pivot is not None
        if pivot.phase is Phase.SUCCEEDED:
            record.active = record.last_successful = pivot.revision
            record.failed_revision, record.failures, record.failed_at = None, 0, None
            return
        record.failed_revision = pivot.revision
        record.failures += 1
        record.failed_at = self.clock()
        if pivot.phase is Phase.ROLLED_BACK:
            record.active = pivot.previous

    # -- target selection --------------------------------------------------------------------------

    def _target(self, p: Pass, peers: held.Peers) -> tuple[int, ResolveSet] | None:
        """The target revision (its number and ResolveSet): the pinned one, or a new resolution
        written as a revision; None when there is none (``out.resolved`` says why)."""
        if p.spec.pinned is not None:
            return self._pinned(p)
        resolution = self._resolution(p, peers)
        if resolution is None:
            return self._without_catalogs(p)
        selection, sources = resolution
        out, record, active = p.out, p.record, p.active
        out.not_newer = selection.not_newer
        document, orphans = keep_installed(selection.document, active)
        try:
            revision = self.store.write(p.spec.ref, document, after=record.highest, owner=p.obj)
        except ProvisionerError as exc:
            self._not_pinned(p, document, exc)
            return None
        # As stored: with the digests and signers the store's preparation pinned.
        document = self._read(revision) or document
        if active is not None and record.active is not None and revision.number != record.active:
            # The active revision was intact when this pass read it. A new revision of the same
            # input is written only for a new selection or when the latest one was changed in
            # the meantime (deleted and re-created by hand): then say so now.
            _, message = self._check_revision(p.spec, record.active)
            if message:
                self._report_modified(
                    out,
                    f"{message}; pivoter rebuilt the state as a new revision from what it had "
                    "read before the change",
                )
        note = resolved_note(orphans, out.shared)
        names = [s.name for s, _ in sources]
        for stale in catalog_selection.not_serving(self.kube, names, kind=p.spec.catalog_kind):
            note += f"; {stale}"
        out.resolved = Resolved(
            ResolutionState.RESOLVED,
            f"resolved {bundles_text(document)} (revision {revision.number}){note}",
        )
        return revision.number, document

    def _not_pinned(self, p: Pass, document: ResolveSet, exc: ProvisionerError) -> None:
        """A new selection whose images could not be pinned and verified
        (:mod:`pivoter.inputs.pinning`) is not written: the input stays on its active revision,
        says why, and looks again soon (a signature pushed, a key added to the policy)."""
        state = (
            ResolutionState.NOT_VERIFIED
            if isinstance(exc, ImageNotVerifiedError)
            else ResolutionState.RESOLUTION_FAILED
        )
        p.out.resolved = Resolved(
            state, f"resolved {bundles_text(document)}, not written as a revision: {exc}"
        )
        p.out.up_to_date = Freshness(
            FreshnessState.UNKNOWN, "NotResolved", "not resolved: see the Resolved condition"
        )
        p.out.selection = p.active
        p.out.requeue_after = PIN_RETRY_SECONDS

    def _note(self, p: Pass, digests: dict[str, str] | None, reads: Reads) -> None:
        """Note what a resolution read (see :mod:`pivoter.inputs.relevance`)."""
        if self.relevance is not None and digests is not None:
            self.relevance.note(p.spec.ref.name, p.spec.generation, digests, reads)

    def _without_catalogs(self, p: Pass) -> tuple[int, ResolveSet] | None:
        """With ``spec.fallback_to_active`` (a ClusterExtension, as OLM v1 does): when the
        catalogs the input resolves from were deleted, the active revision stays the target as
        long as it still meets the request, so spec changes other than the version (config,
        preflight) still reach the children; None otherwise (``out.resolved`` says why)."""
        spec, out, record, active = p.spec, p.out, p.record, p.active
        if (
            not spec.fallback_to_active
            or record.active is None
            or active is None
            or out.resolved is None
            or out.resolved.state is not ResolutionState.NO_CATALOGS
            or catalog_selection.any_catalog(self.kube, spec.catalog_selector, spec.catalog_kind)
            or not meets(active, spec)
        ):
            return None
        out.resolved = Resolved(
            ResolutionState.RESOLVED,
            f"no catalog matches any more; revision {record.active} ({bundles_text(active)}) stays "
            "installed",
        )
        out.selection = active
        return record.active, active

    def _pinned(self, p: Pass) -> tuple[int, ResolveSet] | None:
        """``spec.pinnedRevision``: the stored, intact revision it names, or None (reported)."""
        spec, out = p.spec, p.out
        assert spec.pinned is not None
        revision = self.store.get(spec.ref, spec.pinned)
        document = self._read(revision)
        if revision is None or document is None:
            out.resolved = Resolved(
                ResolutionState.PINNED_REVISION_MISSING,
                f"spec.pinnedRevision {spec.pinned} is not a stored, intact ResolveSet "
                f"revision of {spec.ref}: run pivoter history {spec.ref.cli} and pin another",
            )
            out.selection = p.active
            out.up_to_date = Freshness(
                FreshnessState.UNKNOWN, "Pinned", "not compared with the catalogs: pinned"
            )
            return None
        out.up_to_date = Freshness(
            FreshnessState.UNKNOWN,
            "Pinned",
            f"pinned to revision {spec.pinned}: not compared with the catalogs; pivoter "
            f"unpin {spec.ref.cli} follows them again",
        )
        out.resolved = Resolved(
            ResolutionState.PINNED,
            f"pinned to revision {spec.pinned} ({bundles_text(document)}); pivoter unpin "
            f"{spec.ref.cli} follows the catalogs again",
        )
        return revision.number, document

    def _resolution(
        self, p: Pass, peers: held.Peers
    ) -> tuple[Selection, list[tuple[CatalogInput, str]]] | None:
        """Resolve the input against the selected catalogs, with the active revision (or the
        children) as installed state and what the other inputs hold as held choices; None when
        it cannot be resolved (reported)."""
        spec, out = p.spec, p.out
        requests, installed = self._resolution_state(p)
        began = time.monotonic()
        # What the input requests or installs itself is never held by another: a duplicate
        # there is a conflict (step 1 and the dependency check), not a shared dependency.
        own = set(spec.packages) | {i.package for i in installed}
        digests = self.relevance.digests() if self.relevance is not None else None
        reads = Reads()
        try:
            sources = catalog_selection.gather(
                self.kube, self.cache, spec.catalog_selector, kind=spec.catalog_kind
            )
            holdings = held.described(peers.held(exclude=own), self.cache)
            # described() looked each held bundle up by name in every cached catalog.
            reads.bundles.update((h.package, h.name) for h in holdings)
            selection = resolve(
                sources,
                requests,
                installed,
                held=holdings,
                profile=spec.profile,
                reads=reads,
            )
        except catalog_selection.SelectorError as err:
            state, message = ResolutionState.INVALID_SELECTOR, str(err)
        except ResolveProblem as problem:
            state, message = problem.state, str(problem)
            out.explanation = problem.explanation
            if state is not ResolutionState.NO_CATALOGS:
                self._note(p, digests, reads)
        else:
            self._note(p, digests, reads)
            self._count_resolution(spec, "resolved", began)
            # With the other inputs' pivot targets: a dependency held by an input mid-pivot is
            # named by that input too.
            out.shared = peers.shared(selection.shared)
            return selection, sources
        notes: tuple[str, ...] = ()
        if (
            spec.catalog_kind == catalog_selection.CLUSTER_CATALOG
            and state is not ResolutionState.INVALID_SELECTOR
        ):
            # What OLM v1 would have refused on: a selected ClusterCatalog that is not served.
            notes = tuple(
                text
                for _, text in catalog_selection.cluster_catalogs_not_serving(
                    self.kube, spec.catalog_selector, self.cache
                )
            )
        out.resolved = Resolved(state, message, notes)
        out.up_to_date = Freshness(
            FreshnessState.UNKNOWN, "NotResolved", "not resolved: see the Resolved condition"
        )
        out.selection = p.active
        self._count_resolution(spec, state.value, began)
        return None

    def _active(
        self, spec: InputSpec, record: Record, out: Draft, children: Children
    ) -> ResolveSet | None:
        """The active revision's ResolveSet; a revision deleted or edited by hand is reported
        and the installed state is rebuilt from the children."""
        if record.active is None:
            return None
        document, message = self._check_revision(spec, record.active)
        if not message:
            return document
        if record.pivoting:
            what = "the pivot in progress goes on; revision"
            target = record.pivot.revision if record.pivot else None
            what = f"{what} {target} becomes active when it completes"
        else:
            what = (
                "pivoter rebuilt the installed state from the BundleDeployments and records the "
                "selection as a new revision"
            )
        self._report_modified(out, f"{message}; {what}")
        out.lost_active = record.active
        record.active = None
        return None

    def _check_revision(self, spec: InputSpec, number: int) -> tuple[ResolveSet | None, str]:
        """Revision ``number``'s document, or why it cannot be trusted (deleted or edited)."""
        revision = self.store.get(spec.ref, number)
        if revision is None:
            return None, f"{self.store.describe(spec.ref, number)} is missing: it was deleted"
        check = self.store.verify(revision)
        return (self._read(revision), "") if check.ok else (None, check.message)

    @staticmethod
    def _report_modified(out: Draft, problem: str) -> None:
        out.problem = problem
        out.events.append(("Warning", "ResolveSetModified", problem))

    def _installed_from(self, children: Children) -> list[Installed]:
        installed = []
        for package, bd in children.list().items():
            annotations = bd["metadata"].get("annotations") or {}
            bundle, version = (
                annotations.get(ANNOTATION_BUNDLE),
                annotations.get(ANNOTATION_VERSION),
            )
            if package and bundle and version:
                installed.append(Installed(name=str(bundle), package=package, version=str(version)))
        return installed

    def _resolution_state(self, p: Pass) -> tuple[tuple[PackageRequest, ...], list[Installed]]:
        """The requests and installed state a resolution of this pass starts from."""
        spec, active = p.spec, p.active
        installed = active.installed() if active is not None else self._installed_from(p.children)
        # A package the input no longer requests is not kept as installed: it leaves the
        # selection (and is pruned) unless another selected bundle still requires it.
        dropped = set(p.record.requested) - set(spec.packages)
        installed = [i for i in installed if i.package not in dropped]
        # A takeover's first revision is what the previous manager runs (pivoter.inputs.takeover).
        return takeover.first_resolution(spec.takeover, spec.requests, installed)

    def _peer_packages(
        self, p: Pass, requests: tuple[PackageRequest, ...], installed: list[Installed]
    ) -> frozenset[str] | None:
        """The packages whose holdings this pass can meet (None: any): those a resolution
        can select, depend on or conflict with (:func:`resolver.rules.scope.scope`, over every
        catalog a held bundle may be described from, :func:`held.described`), and those of the
        target it may pin or keep (the dependency check reads them)."""
        if self.children_by_package is None or self.revisions_with is None:
            return None  # no index to read a scope from: read everything
        start = {r.package for r in requests} | {i.package for i in installed}
        start |= set(p.spec.packages)
        if p.active is not None:
            start |= {e.package for e in p.active.entries}
        if p.spec.pinned is not None:
            pinned = self._read(self.store.get(p.spec.ref, p.spec.pinned))
            if pinned is None:
                return None
            start |= {e.package for e in pinned.entries}
        catalogs = {id(entry.catalog): entry.catalog for _, entry in self.cache.by_priority()}
        found = scope(list(catalogs.values()), start, installed)
        return None if found is None else found | start

    def _installs(self, children: Children, document: ResolveSet) -> bool:
        """Whether the children install exactly the bundles of ``document``."""
        wanted = {(i.package, i.name, i.version) for i in document.installed()}
        have = {(i.package, i.name, i.version) for i in self._installed_from(children)}
        return bool(wanted) and wanted == have

    def _document(self, spec: InputSpec, number: int | None) -> ResolveSet | None:
        if number is None:
            return None
        return self._read(self.store.get(spec.ref, number))

    @staticmethod
    def read(revision: Revision | None) -> ResolveSet | None:
        """The ResolveSet of ``revision`` when it is intact and readable, else None."""
        return InputEngine._read(revision)

    @staticmethod
    def _read(revision: Revision | None) -> ResolveSet | None:
        if revision is None or not revision.intact:
            return None
        try:
            return revision.resolveset()
        except ResolveSetError:
            return None

    # -- observation -------------------------------------------------------------------------------

    def observe_active(
        self, spec: InputSpec, out: Draft, children: Children, *, recreating: bool = False
    ) -> list[str]:
        """Report the children of the active revision (``recreating``: a missing one is about
        to be created again); return the packages whose child is missing. With no active
        revision (never installed, or lost to a hand edit), report the children that exist: what
        runs is still reported, never "nothing is installed"."""
        record = out.record
        if record.active is None:
            out.reports = [children.report(p, bd) for p, bd in sorted(children.list().items())]
            return []
        document = self._document(spec, record.active)
        if document is None:
            return []
        existing = children.list()
        missing = "was deleted; re-creating it" if recreating else "was deleted"
        out.reports = [
            children.report(e.package, existing.get(e.package), bundle=e.bundle, missing=missing)
            for e in document.entries
        ]
        if out.selection is None:
            out.selection = document
        if any(r.state is not ChildState.READY for r in out.reports):
            out.requeue_after = min(out.requeue_after or OBSERVE_POLL, OBSERVE_POLL)
        return [r.package for r in out.reports if r.state is ChildState.MISSING]

    def _count_resolution(self, spec: InputSpec, outcome: str, began: float) -> None:
        if self.metrics is not None:
            kind = spec.ref.kind
            self.metrics.resolutions.labels(kind, outcome).inc()
            self.metrics.resolution_duration.labels(kind).observe(time.monotonic() - began)

    def _count_pivot(self, spec: InputSpec, pivot: PivotRecord) -> None:
        if self.metrics is None:
            return
        kind = spec.ref.kind
        if pivot.phase is Phase.ROLLING_BACK:
            self.metrics.rollbacks.labels(kind).inc()
        if pivot.phase.terminal:
            self.metrics.pivots.labels(kind, pivot.phase.value).inc()
        if pivot.phase is Phase.SUCCEEDED:
            duration = max(0.0, self.clock() - pivot.started)
            self.metrics.pivot_duration.labels(kind).observe(duration)

    def _retry_asked(self, spec: InputSpec, record: Record) -> bool:
        return bool(spec.retry_token) and spec.retry_token != record.retry_token


def _pivot_plan(
    obj: Mapping[str, Any], spec: InputSpec, target: ResolveSet, previous: ResolveSet | None
) -> PivotJob:
    """What the pivot of ``obj`` to ``target`` (from ``previous``) installs, and how."""
    return PivotJob(
        ref=spec.ref,
        owner=obj,
        target=target,
        previous=previous,
        service_account=spec.service_account,
        primary_package=spec.primary_package,
        deadline_seconds=spec.progress_deadline,
        auto_rollback=spec.auto_rollback,
        child_settings=spec.child_settings,
    )
