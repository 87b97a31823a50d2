"""Run hooks: objects applied as steps before or after an install or upgrade (Helm chart hooks).

For one event (``pre-install``, ``post-upgrade``, ...) the hooks run one at a time in Helm's
order: weight, then install order of their kind, then name. Each hook:

1. with ``before-hook-creation`` (the default), the object left by its previous run is deleted
   first (and waited for), so a Job runs again rather than failing on its immutable template;
2. is applied with the owner's applier (server-side apply, ownership labels, the owner's
   identity), so it is refused like any object someone else manages;
3. is waited for: a Job until ``Complete`` or ``Failed``, a Pod until ``Succeeded`` or
   ``Failed``, anything else is done once applied; at most ``timeout`` seconds;
4. is deleted afterwards with ``hook-succeeded`` when it succeeded, ``hook-failed`` when it
   failed.

A failed or timed-out hook raises :class:`HookFailed` naming it, the event and why; what follows
it does not run. Hooks are not part of the owner's inventory: they are never pruned or
drift-corrected, and, as with Helm, those not deleted by their policy stay after an uninstall.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from provisioners.apply.applier import Applier, ApplyError
from provisioners.apply.kubeapi import KubeAPI, KubeError, NotFound
from provisioners.apply.objects import ObjectRef, install_order, ref_of
from provisioners.formats.base import Hook

__all__ = ["HOOK_TIMEOUT", "HookFailed", "HookRunner"]

HOOK_TIMEOUT = 300.0
"""Seconds a hook may take (Helm's default ``--timeout`` is 5 minutes)."""


class HookFailed(ApplyError):
    """A hook failed, timed out or could not be applied."""


class HookRunner:
    """Runs the hooks of one owner with its :class:`Applier`."""

    def __init__(
        self,
        applier: Applier,
        *,
        timeout: float = HOOK_TIMEOUT,
        poll: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.applier = applier
        self.api: KubeAPI = applier.api
        self.timeout = timeout
        self.poll = poll
        self.clock = clock
        self.sleep = sleep

    def run(self, hooks: Iterable[Hook], event: str) -> list[str]:
        """Run the hooks of ``event``; return one note per hook run."""
        notes = []
        for hook in order(hooks, event):
            notes.append(self._run_one(hook, event))
        return notes

    def _run_one(self, hook: Hook, event: str) -> str:
        ref = ref_of(hook.object)
        what = f"{event} hook {ref.kind} {ref.name}"
        started = self.clock()
        try:
            resource = self.api.resource(ref.api_version, ref.kind)
            path = resource.path(ref.namespace or self.applier.default_namespace, ref.name)
            if "before-hook-creation" in hook.delete_policies:
                self._delete_and_wait(path, what)
            applied = self.applier.apply([hook.object]).applied
        except (ApplyError, KubeError) as exc:
            raise HookFailed(f"{what} could not be applied: {exc}", ref) from exc
        target = applied[0] if applied else ref
        failure = self._wait(path, target, what)
        seconds = self.clock() - started
        policy = "hook-failed" if failure else "hook-succeeded"
        if policy in hook.delete_policies:
            self._delete(path)
        if failure:
            raise HookFailed(f"{what} failed: {failure}", target)
        return f"ran {what} ({seconds:.1f}s)"

    def _wait(self, path: str, ref: ObjectRef, what: str) -> str:
        """ "" when the hook succeeded, else why it did not."""
        if ref.kind not in ("Job", "Pod"):
            return ""
        deadline = self.clock() + self.timeout
        while True:
            try:
                obj = self.api.request("GET", path)
            except NotFound:
                return "it was deleted before it finished"
            verdict = _outcome(obj)
            if verdict is not None:
                return verdict
            if self.clock() >= deadline:
                return f"not finished after {self.timeout:.0f}s"
            self.sleep(self.poll)

    def _delete(self, path: str) -> None:
        with contextlib.suppress(NotFound):
            self.api.request("DELETE", path, body={"propagationPolicy": "Background"})

    def _delete_and_wait(self, path: str, what: str) -> None:
        self._delete(path)
        deadline = self.clock() + self.timeout
        while True:
            try:
                self.api.request("GET", path)
            except NotFound:
                return
            if self.clock() >= deadline:
                raise HookFailed(f"{what}: its previous run was not deleted within the timeout")
            self.sleep(self.poll)


def order(hooks: Iterable[Hook], event: str) -> list[Hook]:
    """The hooks of ``event`` in the order Helm runs them: weight, kind (install order), name."""
    chosen = [h for h in hooks if event in h.events]
    rank = {id(obj): i for i, obj in enumerate(install_order([h.object for h in chosen]))}
    return sorted(
        chosen,
        key=lambda h: (
            h.weight,
            rank[id(h.object)],
            str((h.object.get("metadata") or {}).get("name") or ""),
        ),
    )


def _outcome(obj: dict[str, Any]) -> str | None:
    """None while a Job or Pod runs; "" when it succeeded; why when it failed."""
    status = obj.get("status") or {}
    if obj.get("kind") == "Pod":
        phase = status.get("phase")
        if phase == "Succeeded":
            return ""
        if phase == "Failed":
            return str(status.get("message") or status.get("reason") or "the Pod failed")
        return None
    for condition in status.get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") in ("Complete", "SuccessCriteriaMet"):
            return ""
        if condition.get("type") in ("Failed", "FailureTarget"):
            return f"{condition.get('reason', 'Failed')}: {condition.get('message', '')}".strip()
    return None
