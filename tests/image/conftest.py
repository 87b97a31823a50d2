"""Fixtures of the image tests: a registry on loopback and the image, built once per session.

The image is built from a clean checkout of HEAD by ``hack/image/build.sh`` (base from Debian
packages pushed to the registry and pulled back by the build, helm from the host's Go), tagged
``localhost/pivoter:test-<session>`` and pushed to the registry as a cluster would pull it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster import SESSION_TOKEN
from tests.image.images import BuiltImage, build, podman
from tests.provisioners.servers import Registry, run_registry


@pytest.fixture(scope="session")
def image_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry on loopback for the base and the built image."""
    with run_registry(tmp_path_factory.mktemp("image-registry")) as running:
        yield running


@pytest.fixture(scope="session")
def built_image(
    image_registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BuiltImage]:
    """pivoter's image, built once per session; removed from the local storage afterwards (the
    cached layers stay, so the next session's build is warm)."""
    log = tmp_path_factory.mktemp("image-build") / "build.log"
    image = build(f"localhost/pivoter:test-{SESSION_TOKEN}", image_registry.host, log)
    print(f"\nimage built in {image.seconds:.0f} s ({image.tag}, {image.image_id[:19]})")
    yield image
    podman("rmi", "--force", image.tag)
