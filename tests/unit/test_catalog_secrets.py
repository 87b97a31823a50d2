"""A catalog's pull secrets serve the images that catalog names, and nothing else."""

from __future__ import annotations

from pivoter.registries import PullSecretRef
from pivoter.registries.access import CatalogSecrets

A = PullSecretRef("pivoter-system", "a-pull", required=True)
B = PullSecretRef("openshift-marketplace", "b-pull")


def test_only_the_images_a_catalog_names_get_its_secrets() -> None:
    secrets = CatalogSecrets()
    secrets.record("cat-a", "sha256:1", [A], ["quay.io/a/op@sha256:1", ""])
    secrets.record("CatalogSource/openshift-marketplace/b", "sha256:2", [B], ["quay.io/b/op:v1"])
    assert secrets.for_image("quay.io/a/op@sha256:1") == [A]
    assert secrets.for_image("quay.io/b/op:v1") == [B]
    # Not named by any catalog (a Bundle of someone's own choosing): no catalog's secret.
    assert secrets.for_image("quay.io/a/other@sha256:1") == []
    assert secrets.for_image("") == []


def test_catalogs_naming_one_image_offer_each_secret_once_by_catalog_name() -> None:
    secrets = CatalogSecrets()
    image = "registry.example/op@sha256:9"
    secrets.record("z-catalog", "sha256:1", [B, A], [image])
    secrets.record("a-catalog", "sha256:2", [A], [image])
    assert secrets.for_image(image) == [A, B]


def test_new_content_new_secrets_and_forgetting_replace_what_was_recorded() -> None:
    secrets = CatalogSecrets()
    secrets.record("cat", "sha256:1", [A], ["old@sha256:1"])
    secrets.record("cat", "sha256:2", [A], ["new@sha256:2"])
    assert secrets.for_image("old@sha256:1") == []
    assert secrets.for_image("new@sha256:2") == [A]
    # The same content with another secret (an annotation changed, not the content).
    secrets.record("cat", "sha256:2", [B], ["new@sha256:2"])
    assert secrets.for_image("new@sha256:2") == [B]
    # No secret any more (the annotation was removed), then gone.
    secrets.record("cat", "sha256:2", [], ["new@sha256:2"])
    assert secrets.for_image("new@sha256:2") == []
    secrets.record("cat", "sha256:3", [A], ["x@sha256:3"])
    secrets.forget("cat")
    assert secrets.for_image("x@sha256:3") == []
