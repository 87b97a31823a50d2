"""The daemon's catalog and bundle paths refuse what would take gigabytes, with 1 GiB to spare.

``pivoter run`` (the package's daemon, a real process) is given an address-space limit of what it
maps now plus 1 GiB (``prlimit --pid``, as ``prlimit --as`` would have set at its start: its
threads' stacks and malloc arenas already map about 1.3 GB of which it uses 90 MB). Then a
BundleDeployment whose manifest is an alias bomb by size, one whose image layer is a gzip stream
of empty members, and a Catalog whose ConfigMap is an alias bomb by size: each is refused with the
guard's one line in its status, and the daemon is still running, still serving its other inputs.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from pivoter.apis.resources import CATALOGS
from pivoter.catalogs import REASON_INVALID
from pivoter.kube import NotFound
from tests.cluster import session_labels, unique_name, wait_for
from tests.e2e.helpers import E2E, condition
from tests.manifests import cm_manifest
from tests.provisioners.oci import Pusher
from tests.provisioners.servers import Registry

pytestmark = pytest.mark.cluster

SPARE = 1 << 30
"""Address space the daemon may map beyond what it maps when the test starts."""

EXPANDS = re.compile(r"expands to more than [\d,]+ bytes")
"""The safe loader's refusal of an alias bomb by size (resolver.safedata)."""


def _alias_bomb(head: str) -> str:
    """A YAML document of 512 KiB whose 2,000 aliases of one scalar would expand to 1 GiB."""
    aliases = ", ".join(["*big"] * 2000)
    return f"{head}description: &big '{'x' * (512 << 10)}'\nmore: [{aliases}]\n"


def _mapped_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmSize in /proc/{pid}/status")


@contextmanager
def _address_space(pid: int) -> Iterator[int]:
    limit = _mapped_bytes(pid) + SPARE
    # The soft limit only: it binds as the hard one does, and can be lifted again without
    # CAP_SYS_RESOURCE (which this sandbox, like most containers, does not grant).
    subprocess.run(["prlimit", f"--pid={pid}", f"--as={limit}:unlimited"], check=True)
    try:
        yield limit
    finally:
        subprocess.run(["prlimit", f"--pid={pid}", "--as=unlimited:unlimited"], check=True)


@pytest.fixture
def limited(e2e: E2E) -> Iterator[E2E]:
    """The daemon under its address-space limit; afterwards it must still be running."""
    with _address_space(e2e.daemon.pid):
        yield e2e
        assert e2e.daemon.process is not None
        assert e2e.daemon.process.poll() is None, f"the daemon died: {e2e.daemon.tail(2000)}"


def test_a_bundle_manifest_that_expands_to_gigabytes_is_refused(limited: E2E) -> None:
    content = limited.config_map({"bomb.yaml": _alias_bomb(cm_manifest("bomb", "default"))})
    source = {
        "type": "configMaps",
        "configMaps": [{"configMap": {"name": content}, "path": "manifests"}],
    }
    name = limited.deploy(source)
    message = condition(limited.wait_unpack_failed(name), "HasValidBundle")["message"]
    assert EXPANDS.search(message), message
    assert "\n" not in message

    # the daemon still installs what fits
    good = limited.config_map({"cm.yaml": cm_manifest("after-the-bomb", limited.namespace)})
    fine = limited.deploy(
        {"type": "configMaps", "configMaps": [{"configMap": {"name": good}, "path": "manifests"}]}
    )
    limited.wait_installed(fine)


def test_an_image_layer_of_empty_gzip_members_is_refused(
    limited: E2E, registry: Registry, pusher: Pusher
) -> None:
    repo = unique_name("empty-members")
    layer = gzip.compress(b"", mtime=0) * ((8 << 20) // len(gzip.compress(b"", mtime=0)))
    pusher.image(repo, "v1", [layer])
    name = limited.deploy({"type": "image", "image": {"ref": f"{registry.host}/{repo}:v1"}})
    message = condition(limited.wait_unpack_failed(name), "HasValidBundle")["message"]
    assert "compressed" in message.lower(), message
    assert "\n" not in message


def test_a_catalog_that_expands_to_gigabytes_is_refused(limited: E2E) -> None:
    head = "schema: olm.package\nname: bomb\n"
    content = limited.config_map({"catalog.yaml": _alias_bomb(head)})
    name = unique_name("bomb")
    body: dict[str, Any] = {
        "apiVersion": "pivoter.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": name, "labels": session_labels()},
        "spec": {
            "source": {"type": "configMaps", "configMaps": [{"name": content}]},
            "pollInterval": "1h",
        },
    }
    limited.kube.create(CATALOGS, body)
    try:

        def refused() -> dict[str, Any] | None:
            serving = condition(limited.kube.get(CATALOGS, name), "Serving")
            return serving if serving.get("reason") == REASON_INVALID else None

        serving = wait_for(refused, timeout=60, interval=0.25, what=f"Catalog {name} Invalid")
        assert serving["status"] == "False"
        assert EXPANDS.search(serving["message"]), serving["message"]
    finally:
        with suppress(NotFound):
            limited.kube.delete(CATALOGS, name)
