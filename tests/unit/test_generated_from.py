"""pivoter.controllers.generatedbundles.generated_from: a BundleDeployment's generated Bundles
from the informer store's label index, only those it owns."""

from __future__ import annotations

from typing import Any

from pivoter.controllers.generatedbundles import KIND, generated_from
from pivoter.runtime import Store
from provisioners.apply.objects import LABEL_OWNER_KIND, LABEL_OWNER_NAME


def _bundle(name: str, rv: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": labels}}


def test_only_the_bundles_a_deployment_owns_as_they_are_now() -> None:
    store = Store()
    store.upsert(_bundle("web-b", "1", **{LABEL_OWNER_KIND: KIND, LABEL_OWNER_NAME: "web"}))
    store.upsert(_bundle("web-a", "1", **{LABEL_OWNER_KIND: KIND, LABEL_OWNER_NAME: "web"}))
    store.upsert(_bundle("db-a", "1", **{LABEL_OWNER_KIND: KIND, LABEL_OWNER_NAME: "db"}))
    store.upsert(_bundle("other", "1", **{LABEL_OWNER_KIND: "Other", LABEL_OWNER_NAME: "web"}))
    store.upsert(_bundle("plain", "1"))
    generated = generated_from(store)
    assert [b["metadata"]["name"] for b in generated("web")] == ["web-a", "web-b"]
    # Relabelled away, or deleted: no longer the deployment's.
    store.upsert(_bundle("web-a", "2", **{LABEL_OWNER_KIND: KIND, LABEL_OWNER_NAME: "db"}))
    store.delete(_bundle("web-b", "3"))
    assert generated("web") == []
    assert [b["metadata"]["name"] for b in generated("db")] == ["db-a", "web-a"]
