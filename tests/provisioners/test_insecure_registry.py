"""A plain-http registry at an address that is not loopback, as disconnected labs run mirrors.

containers/image reaches a registry that ``registries.conf`` marks ``insecure = true`` by https
without certificate checks, then by plain http when https cannot be spoken there; without the
mark it never falls back to http. pivoter pulls the same way (issue 30's upgrade test found it
only tried https: every pull from such a mirror failed with "wrong version number").
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from provisioners.errors import SourceError
from provisioners.httpclient import TlsOptions
from provisioners.registries import RegistryAccess, open_image, parse_registries_conf
from provisioners.registries.reference import parse_reference
from provisioners.sources.base import FetchOptions
from provisioners.sources.image import ImageSource, ImageSpec
from tests.provisioners.conftest import pusher_for
from tests.provisioners.oci import plain_bundle
from tests.provisioners.servers import Registry, run_registry

pytestmark = pytest.mark.tools
OPTIONS = FetchOptions(timeout_seconds=5, deadline_seconds=30)
ETC = "registries.conf /etc/containers/registries.conf"


def _own_address() -> str:
    """This machine's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), f"no address besides loopback here ({address})"
    return address


@pytest.fixture(scope="module")
def lab_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with run_registry(tmp_path_factory.mktemp("lab"), address=_own_address()) as running:
        pusher_for(running).image("team/app", "v1", [plain_bundle("from-the-lab")])
        yield running


def _access(registry: Registry, insecure: bool) -> RegistryAccess:
    text = f'[[registry]]\nlocation = "{registry.host}"\ninsecure = {str(insecure).lower()}\n'
    return RegistryAccess(mirrors=parse_registries_conf(text, ETC))


def test_an_insecure_registry_is_pulled_over_plain_http(
    lab_registry: Registry, tmp_path: Path
) -> None:
    reference = f"{lab_registry.host}/team/app:v1"
    ImageSource().fetch(ImageSpec(reference, access=_access(lab_registry, True)), tmp_path, OPTIONS)
    assert "from-the-lab" in (tmp_path / "manifests" / "objects.yaml").read_text()


def test_without_the_mark_plain_http_is_never_used(lab_registry: Registry) -> None:
    with pytest.raises(SourceError) as refused:
        open_image(
            parse_reference(f"{lab_registry.host}/team/app:v1"),
            _access(lab_registry, False),
            tls=TlsOptions(),
            timeout=5,
            deadline=30,
        )
    assert lab_registry.host in str(refused.value)
    assert "\n" not in str(refused.value)
