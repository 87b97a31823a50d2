"""Hand an adopted operator back to OLM v0 (``pivoter adopt --undo``), while OLM v0 still runs.

In this order: the Resolution is deleted with ``deletionPolicy: Orphan``, its children are
deleted without uninstalling (their finalizer removed) and pivoter's owner labels are taken off
the objects, which keep running; then the Subscription is re-created as it was adopted,
with ``startingCSV`` set to the bundle pivoter runs now, so OLM v0 installs exactly that CSV
over the running objects (it updates what exists by name). Webhook configurations pivoter
managed are deleted once the CSV has succeeded: OLM v0 finds its own by label and creates new
ones, so the old ones would answer twice. Between the first and second step nothing manages the
operator (it keeps running); the adoption itself never has such a gap.

Called by ``pivoter adopt --undo``.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pivoter.apis.inventory import inventory_of
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, RESOLUTIONS
from pivoter.kube import Conflict, Kube, NotFound, Object
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, LABEL_ADOPTED_FROM, recorded_subscription
from pivoter.olmv0.resources import CSVS, LABEL_OWNER, SUBSCRIPTIONS
from pivoter.pivot import Children
from pivoter.resolvesets import InputRef

__all__ = ["adopted", "describe", "hand_back"]

POLL = 1.0
PIVOTER_LABELS = ("core.rukpak.io/owner-kind", "core.rukpak.io/owner-name")
"""The owner labels pivoter's BundleDeployments put on what they apply."""


def _recorded(res: Object) -> dict[str, Any]:
    return recorded_subscription(res)


def adopted(kube: Kube, namespace: str, subscription: str = "") -> list[Object]:
    """The Resolutions that adopted ``namespace``'s Subscriptions (or just ``subscription``)."""
    items, _ = kube.list(RESOLUTIONS, label_selector=f"{LABEL_ADOPTED_FROM}={namespace}")
    return [
        r
        for r in items
        if (r["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPTION)
        and (not subscription or _recorded(r).get("name") == subscription)
    ]


def _bundle(res: Object) -> str:
    selection = (res.get("status") or {}).get("selection") or []
    return str(selection[0].get("bundle") or "") if selection else ""


def describe(res: Object) -> str:
    """One line: what handing ``res`` back does."""
    recorded = _recorded(res)
    return (
        f"Resolution {res['metadata']['name']} (orphaning what it installed) -> Subscription "
        f"{recorded.get('namespace')}/{recorded.get('name')} with startingCSV {_bundle(res)}"
    )


def _wait(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(POLL)
    return False


def hand_back(kube: Kube, res: Object, *, timeout: float) -> str:
    """Give the operator of ``res`` back to OLM v0; a line saying what happened."""
    name = res["metadata"]["name"]
    recorded = _recorded(res)
    namespace, subscription = str(recorded["namespace"]), str(recorded["name"])
    starting = _bundle(res)
    children = Children(kube, InputRef("Resolution", name)).list()
    inventory = [ref for bd in children.values() for ref in inventory_of(bd.get("status"))]
    webhooks = [ref for ref in inventory if ref.kind.endswith("WebhookConfiguration")]
    kube.merge_patch(RESOLUTIONS, name, {"spec": {"deletionPolicy": "Orphan"}})
    with contextlib.suppress(NotFound):
        kube.delete(RESOLUTIONS, name)

    def gone() -> bool:
        try:
            kube.get(RESOLUTIONS, name)
        except NotFound:
            return True
        return False

    if not _wait(gone, timeout):
        return f"Resolution {name} was not deleted within {timeout:g} s (is the daemon running?)"
    # The orphaned children would still correct drift: they go without their finalizer (which
    # would uninstall), and the objects lose pivoter's owner labels.
    for bd in children.values():
        with contextlib.suppress(NotFound):
            current = kube.get(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"])
            kube.set_finalizers(BUNDLE_DEPLOYMENTS, current, [])
            kube.delete(BUNDLE_DEPLOYMENTS, bd["metadata"]["name"])
    for ref in inventory:
        resource = kube.resource(ref.api_version, ref.kind)
        patch = {"metadata": {"labels": dict.fromkeys(PIVOTER_LABELS)}}
        with contextlib.suppress(NotFound):
            kube.merge_patch(resource, ref.name, patch, ref.namespace or None)
    spec = {**dict(recorded.get("spec") or {}), "startingCSV": starting}
    body = {
        "apiVersion": SUBSCRIPTIONS.api_version,
        "kind": SUBSCRIPTIONS.kind,
        "metadata": {"name": subscription, "namespace": namespace},
        "spec": spec,
    }
    with contextlib.suppress(Conflict):
        kube.create(SUBSCRIPTIONS, body, namespace)

    def succeeded() -> bool:
        try:
            csv = kube.get(CSVS, starting, namespace)
        except NotFound:
            return False
        return bool((csv.get("status") or {}).get("phase") == "Succeeded")

    if not _wait(succeeded, timeout):
        return (
            f"Subscription {namespace}/{subscription} re-created, but CSV {starting} did not "
            f"succeed within {timeout:g} s; see the CSV's status"
        )
    for ref in webhooks:
        resource = kube.resource(ref.api_version, ref.kind)
        with contextlib.suppress(NotFound):
            obj = kube.get(resource, ref.name)
            if LABEL_OWNER not in (obj["metadata"].get("labels") or {}):
                kube.delete(resource, ref.name)
    return f"handed back: Subscription {namespace}/{subscription} runs CSV {starting} again"
