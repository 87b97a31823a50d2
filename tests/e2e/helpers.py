"""Helpers for the end-to-end tests: create BundleDeployments and bundle content through the API,
wait for conditions, build small plain bundles, and clean up.

Everything goes through the API server: the daemon under test (``pivoter run``) does the rest.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES
from pivoter.kube import Conflict, Kube, NotFound, Resource
from tests.cluster import session_labels, unique_name, wait_for
from tests.e2e.daemon import Daemon
from tests.manifests import cm_manifest
from tests.provisioners.git_servers import git
from tests.provisioners.oci import Entry, file, tar_bytes

__all__ = [
    "BUNDLES",
    "BUNDLE_DEPLOYMENTS",
    "CRDS",
    "E2E",
    "NAMESPACES",
    "condition",
    "installed",
    "is_",
    "make_bundle_repo",
    "plain_layer",
    "tgz",
]

NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
PLAIN = "core-rukpak-io-plain"


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition ``type_`` of ``obj`` (empty dict if absent)."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def is_(obj: dict[str, Any], type_: str, status: str, reason: str | None = None) -> bool:
    """Whether ``obj`` has condition ``type_`` with ``status`` (and ``reason``)."""
    c = condition(obj, type_)
    return c.get("status") == status and (reason is None or c.get("reason") == reason)


def installed(bd: dict[str, Any]) -> bool:
    """``Installed=True/InstallationSucceeded`` for the current generation."""
    c = condition(bd, "Installed")
    return (
        c.get("status") == "True"
        and c.get("reason") == "InstallationSucceeded"
        and (bd.get("status") or {}).get("observedGeneration") == bd["metadata"]["generation"]
    )


def plain_layer(files: dict[str, str | bytes], extra: list[Entry] | None = None) -> list[Entry]:
    """Tar entries of a plain+v0 bundle: ``files`` go to ``manifests/``."""
    entries = [Entry("manifests/", kind=b"5")]
    entries += [file(f"manifests/{name}", data) for name, data in files.items()]
    return entries + list(extra or [])


def make_bundle_repo(root: Path, name: str, namespace: str) -> Path:
    """A bare repo ``name.git`` like :func:`tests.provisioners.git_servers.make_repo`, with
    namespaced objects: commit 1 (tag ``v1``) has ``bundle/manifests/cm.yaml`` naming ``first``;
    commit 2 (branches ``main`` and ``dev``) renames it ``second`` and adds ``manifests/`` at the
    root naming ``root``."""
    work = root / f"{name}-work"
    (work / "bundle" / "manifests").mkdir(parents=True)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    (work / "bundle" / "manifests" / "cm.yaml").write_text(cm_manifest("first", namespace))
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "first", cwd=work)
    git("tag", "-a", "v1", "-m", "v1", cwd=work)
    (work / "bundle" / "manifests" / "cm.yaml").write_text(cm_manifest("second", namespace))
    (work / "manifests").mkdir()
    (work / "manifests" / "root.yaml").write_text(cm_manifest("root", namespace))
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "second", cwd=work)
    git("branch", "dev", cwd=work)
    bare = root / f"{name}.git"
    git("clone", "--quiet", "--bare", str(work), str(bare))
    return bare


def tgz(entries: list[Entry]) -> bytes:
    """A tar.gz of ``entries`` (an http source's tarball)."""
    return gzip.compress(tar_bytes(entries), mtime=0)


class E2E:
    """Talks to the API server on behalf of one test; remembers what to delete afterwards."""

    def __init__(self, kube: Kube, daemon: Daemon, namespace: str) -> None:
        self.kube = kube
        self.daemon = daemon
        self.namespace = namespace
        """The test's namespace, for the objects bundles install."""
        self.system_namespace = daemon.namespace
        self._deployments: list[str] = []

    # -- content in the system namespace -----------------------------------------------------

    def config_map(self, files: dict[str, str], *, immutable: bool = True) -> str:
        """An (immutable) ConfigMap of bundle files in the system namespace; returns its name."""
        name = unique_name("content")
        self.kube.create(
            CONFIG_MAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": session_labels()},
                "data": files,
                "immutable": immutable,
            },
            namespace=self.system_namespace,
        )
        return name

    def secret(self, data: dict[str, bytes], type_: str = "Opaque", name: str = "") -> str:
        """A Secret in the system namespace; returns its name."""
        name = name or unique_name("secret")
        self.kube.create(
            SECRETS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": type_,
                "metadata": {"name": name, "labels": session_labels()},
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
            },
            namespace=self.system_namespace,
        )
        return name

    # -- BundleDeployments -------------------------------------------------------------------

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a BundleDeployment from a full document (deleted after the test)."""
        created = self.kube.create(BUNDLE_DEPLOYMENTS, body)
        self._deployments.append(created["metadata"]["name"])
        return created

    def deploy(self, source: dict[str, Any], *, name: str = "", **spec: Any) -> str:
        """Create a plain BundleDeployment whose template has ``source``; returns its name."""
        name = name or unique_name("bd")
        self.create(
            {
                "apiVersion": "core.rukpak.io/v1alpha1",
                "kind": "BundleDeployment",
                "metadata": {"name": name, "labels": session_labels()},
                "spec": {
                    "provisionerClassName": PLAIN,
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"provisionerClassName": PLAIN, "source": source},
                    },
                    **spec,
                },
            }
        )
        return name

    def retarget(self, name: str, source: dict[str, Any]) -> None:
        """Replace the template's source (a pivot), whatever kind it was before."""
        for _ in range(10):  # the daemon writes status (and finalizers) concurrently
            bd = self.kube.get(BUNDLE_DEPLOYMENTS, name)
            bd["spec"]["template"]["spec"]["source"] = source
            try:
                self.kube.replace(BUNDLE_DEPLOYMENTS, bd)
                return
            except Conflict:
                time.sleep(0.2)
        raise AssertionError(f"could not update BundleDeployment {name}: conflicts")

    def get(self, name: str) -> dict[str, Any]:
        """The BundleDeployment ``name``."""
        return self.kube.get(BUNDLE_DEPLOYMENTS, name)

    def wait(
        self,
        name: str,
        until: Callable[[dict[str, Any]], bool],
        *,
        what: str,
        timeout: float = 90.0,
    ) -> dict[str, Any]:
        """Poll the BundleDeployment until ``until`` holds; fail with its status and the log."""
        seen: dict[str, Any] = {}

        def holds() -> dict[str, Any] | None:
            bd = seen["bd"] = self.get(name)
            return bd if until(bd) else None

        return wait_for(
            holds,
            timeout=timeout,
            interval=0.25,
            what=f"{what} on {name}",
            detail=lambda: (
                f"status: {seen['bd'].get('status')}\ndaemon log tail:\n{self.daemon.tail(2000)}"
            ),
        )

    def wait_installed(self, name: str, timeout: float = 90.0) -> dict[str, Any]:
        """Wait for ``Installed=True/InstallationSucceeded``."""
        return self.wait(name, installed, what="Installed", timeout=timeout)

    def wait_unpack_failed(self, name: str, timeout: float = 90.0) -> dict[str, Any]:
        """Wait for ``HasValidBundle=False/UnpackFailed`` for the current generation."""
        return self.wait(
            name,
            lambda bd: (
                is_(bd, "HasValidBundle", "False", "UnpackFailed")
                and condition(bd, "HasValidBundle").get("observedGeneration")
                == bd["metadata"]["generation"]
            ),
            what="HasValidBundle=False/UnpackFailed",
            timeout=timeout,
        )

    def bundles_of(self, name: str) -> list[str]:
        """Names of the Bundles generated for BundleDeployment ``name``."""
        owned, _ = self.kube.list(
            BUNDLES,
            label_selector=f"core.rukpak.io/owner-kind=BundleDeployment,core.rukpak.io/owner-name={name}",
        )
        return sorted(b["metadata"]["name"] for b in owned)

    def config_map_in(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """A ConfigMap of the test namespace (or ``namespace``), None when absent."""
        try:
            return self.kube.get(CONFIG_MAPS, name, namespace or self.namespace)
        except NotFound:
            return None

    def delete(self, name: str, timeout: float = 90.0) -> None:
        """Delete a BundleDeployment and wait until the daemon has finalized it."""
        with contextlib.suppress(NotFound):
            self.kube.delete(BUNDLE_DEPLOYMENTS, name)

        def finalized() -> bool:
            try:
                self.get(name)
            except NotFound:
                return True
            return False

        wait_for(
            finalized, timeout=timeout, interval=0.25, what=f"BundleDeployment {name} to finalize"
        )

    def cleanup(self) -> None:
        """Delete the test's BundleDeployments (drop the finalizer if the daemon cannot)."""
        for name in self._deployments:
            try:
                self.delete(name, timeout=30)
            except AssertionError:
                with contextlib.suppress(NotFound):
                    self.kube.merge_patch(
                        BUNDLE_DEPLOYMENTS, name, {"metadata": {"finalizers": None}}
                    )
