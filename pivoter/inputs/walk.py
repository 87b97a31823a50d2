"""Walk an upgrade path on a cluster, one pivot per step (``pivoter catalog test --live``).

A temporary Resolution asks for the package at exactly the first version of the path, from the
Catalogs a label selector matches; then its request is moved to each next version in turn. The
daemon (``pivoter run``) does the rest, as it would for any user: resolution (which refuses a
step the catalog has no upgrade edge for), a ResolveSet revision, a grouped pivot with the real
provisioners. Each step ends when the Resolution is ``Ready`` at that version, when its pivot
failed or was rolled back, when the request is unsatisfiable or another input already installs
the package, or at a timeout; the walk stops at
the first step that does not install. The Resolution is deleted at the end (what it installed
is removed with it) unless it is kept.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pivoter.apis import pivoter as api
from pivoter.apis.conditions import find
from pivoter.apis.resources import RESOLUTIONS
from pivoter.inputs.facts import ResolutionState, progress_of
from pivoter.inputs.record import Record
from pivoter.kube import Kube, NotFound

__all__ = ["INSTALLED", "StepOutcome", "Walker"]

INSTALLED = "Installed"
STOPS = frozenset({ResolutionState.UNSATISFIABLE, ResolutionState.CONFLICT})
"""How a resolution ends a step (the request cannot be met)."""


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What one step of the walk did."""

    step: int
    from_version: str
    """"" for the first install."""
    to_version: str
    outcome: str
    """``Installed``, ``PivotFailed``, ``RolledBack``, ``Unsatisfiable``, ``Conflict`` (another
    input installs the package) or ``TimedOut``."""
    seconds: float
    message: str
    revision: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the step installed its version."""
        return self.outcome == INSTALLED

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return asdict(self)


@dataclass
class Walker:
    """Drives one temporary Resolution along a path (see the module docstring)."""

    kube: Kube
    package: str
    channel: str
    catalog_labels: Mapping[str, str]
    progress_deadline: int = 120
    step_timeout: float = 300.0
    poll: float = 0.5
    name: str = field(default_factory=lambda: f"pivoter-live-{secrets.token_hex(3)}")
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def walk(
        self, versions: Iterable[str], on_step: Callable[[StepOutcome], None] | None = None
    ) -> list[StepOutcome]:
        """Install the first version, then upgrade to each next one; stop at the first step
        that does not install."""
        outcomes: list[StepOutcome] = []
        previous = ""
        for number, version in enumerate(versions, start=1):
            outcome = self._step(number, previous, version)
            outcomes.append(outcome)
            if on_step is not None:
                on_step(outcome)
            if not outcome.ok:
                break
            previous = version
        return outcomes

    def delete(self, timeout: float = 120.0) -> bool:
        """Delete the Resolution and wait until it is gone (its bundles uninstalled)."""
        try:
            self.kube.delete(RESOLUTIONS, self.name)
        except NotFound:
            return True
        deadline = self.clock() + timeout
        while self.clock() < deadline:
            try:
                self.kube.get(RESOLUTIONS, self.name)
            except NotFound:
                return True
            self.sleep(self.poll)
        return False

    # -- one step --------------------------------------------------------------------------------

    def _request(self, version: str) -> dict[str, Any]:
        request = {"name": self.package, "versionRange": version}
        if self.channel:
            request["channel"] = self.channel
        return request

    def _step(self, number: int, previous: str, version: str) -> StepOutcome:
        started = self.clock()
        if not previous:
            before: int | None = None
            body = {
                "apiVersion": api.API_VERSION,
                "kind": "Resolution",
                "metadata": {"name": self.name, "labels": {"app.kubernetes.io/part-of": "pivoter"}},
                "spec": {
                    "packages": [self._request(version)],
                    "catalogSelector": {"matchLabels": dict(self.catalog_labels)},
                    "progressDeadlineSeconds": self.progress_deadline,
                },
            }
            written = self.kube.create(RESOLUTIONS, body)
        else:
            current = self.kube.get(RESOLUTIONS, self.name)
            before = (current.get("status") or {}).get("lastAttemptedRevision")
            written = self.kube.merge_patch(
                RESOLUTIONS, self.name, {"spec": {"packages": [self._request(version)]}}
            )
        generation = int(written["metadata"].get("generation") or 0)
        while True:
            obj = self.kube.get(RESOLUTIONS, self.name)
            verdict = _verdict(obj, generation, self.package, version, before)
            elapsed = self.clock() - started
            if verdict is not None:
                outcome, message = verdict
                revision = (obj.get("status") or {}).get("lastAttemptedRevision")
                return StepOutcome(
                    number, previous, version, outcome, round(elapsed, 2), message, revision
                )
            if elapsed > self.step_timeout:
                ready = find((obj.get("status") or {}).get("conditions") or [], api.TYPE_READY)
                message = f"not done after {self.step_timeout:.0f}s" + (
                    f"; Ready: {ready.get('message')}" if ready else ""
                )
                return StepOutcome(
                    number, previous, version, "TimedOut", round(elapsed, 2), message
                )
            self.sleep(self.poll)


def _verdict(
    obj: Mapping[str, Any], generation: int, package: str, version: str, before: int | None
) -> tuple[str, str] | None:
    """How the step ended, as (outcome, message); None while it goes on."""
    status = obj.get("status") or {}
    if int(status.get("observedGeneration") or 0) < generation:
        return None
    conditions = status.get("conditions") or []
    record = Record.from_status(status)
    if record.resolution in STOPS:
        resolved = find(conditions, api.TYPE_RESOLVED) or {}
        message = status.get("explanation") or resolved.get("message") or ""
        return record.resolution.value, str(message)
    attempted = status.get("lastAttemptedRevision")
    if attempted is None or attempted == before:
        return None  # the step's pivot has not started
    pivot = record.pivot
    state = progress_of(pivot).state if pivot is not None else None
    if pivot is not None and state is not None and state.failed and pivot.revision == attempted:
        progressing = find(conditions, api.TYPE_PROGRESSING) or {}
        return state.value, str(progressing.get("message") or "")
    ready = find(conditions, api.TYPE_READY) or {}
    selected = {s.get("package"): s.get("version") for s in status.get("selection") or []}
    if (
        ready.get("status") == "True"
        and selected.get(package) == version
        and status.get("activeRevision") == attempted
    ):
        return INSTALLED, str(ready.get("message") or "")
    return None
