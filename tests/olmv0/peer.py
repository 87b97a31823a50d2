"""The real OLM v0 as a test peer: its CRDs, its two controllers on the host, and the objects a
user of OLM v0 writes (OperatorGroup, CatalogSource, Subscription).

``olm`` (olm-operator: CSVs, OperatorGroups) and ``catalog`` (catalog-operator: CatalogSources,
Subscriptions, InstallPlans) are built by ``hack/tools/olm.sh`` with OLM's CRDs beside them; they
run out of cluster against the local control plane with the admin kubeconfig. A CatalogSource
of type ``grpc`` names ``127.0.0.1:PORT`` of an ``opm serve`` on the host, so no registry pod is
needed, and the catalog answers with the bundles' manifests inline (tests/olmv0/content.py), so
no unpack Job is needed either. Deployments' pods run on the simulated node, which is enough for
CSVs to reach ``Succeeded``. Used by tests/olmv0/conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pivoter.kube import Conflict, Kube, NotFound, Resource
from provisioners.apply.applier import Applier, Owner
from provisioners.apply.kubeapi import KubeAPI
from tests.cluster import session_labels, unique_name
from tests.polling import wait_for
from tests.tools import TOOLS_DIR, tool

__all__ = [
    "CATALOG_SOURCES",
    "CSVS",
    "INSTALL_PLANS",
    "OPERATOR_CONDITIONS",
    "OPERATOR_GROUPS",
    "SUBSCRIPTIONS",
    "OlmV0",
]

GROUP = "operators.coreos.com"
CATALOG_SOURCES = Resource(f"{GROUP}/v1alpha1", "CatalogSource", "catalogsources", True)
SUBSCRIPTIONS = Resource(f"{GROUP}/v1alpha1", "Subscription", "subscriptions", True)
INSTALL_PLANS = Resource(f"{GROUP}/v1alpha1", "InstallPlan", "installplans", True)
CSVS = Resource(f"{GROUP}/v1alpha1", "ClusterServiceVersion", "clusterserviceversions", True)
OPERATOR_GROUPS = Resource(f"{GROUP}/v1", "OperatorGroup", "operatorgroups", True)
OPERATOR_CONDITIONS = Resource(f"{GROUP}/v2", "OperatorCondition", "operatorconditions", True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", False)
OLM_NAMESPACE = "olm"
"""The catalog-operator's global catalog namespace (its default)."""


CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
RBAC = "rbac.authorization.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
LEFT_BEHIND = (
    CRDS,
    Resource(RBAC, "ClusterRole", "clusterroles", False),
    Resource(RBAC, "ClusterRoleBinding", "clusterrolebindings", False),
    Resource(ADMISSION, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False),
    Resource(ADMISSION, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False),
)
PIVOTER_OWNER = "core.rukpak.io/owner-name"


def _crd_files() -> list[Path]:
    directory = TOOLS_DIR / "olm-crds"
    if not directory.is_dir():
        tool("olm")  # fails the test with the install command
    return sorted(directory.glob("*.yaml"))


class OlmV0:
    """OLM v0's controllers running against one cluster, plus helpers to drive them."""

    def __init__(self, kubeconfig: Path, kube: KubeAPI, client: Kube, workdir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.api = kube
        self.kube = client
        self.workdir = workdir
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def install_crds(self) -> None:
        """Apply OLM's CRDs (as shipped with the built version) and wait until Established."""
        objects = [yaml.safe_load(p.read_text()) for p in _crd_files()]
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"

        def settled() -> bool:
            """No CRD of OLM's names is still being deleted (tests/catalogs makes a stand-in
            CatalogSource CRD and deletes it)."""
            for obj in objects:
                try:
                    live = self.api.request("GET", crds + obj["metadata"]["name"])
                except NotFound:
                    continue
                if live["metadata"].get("deletionTimestamp"):
                    return False
            return True

        wait_for(settled, timeout=120, what="earlier CRDs of OLM's names to be deleted")
        # adopt: a stand-in of another test (or of a run that died) is replaced, not refused.
        Applier(self.api, Owner("Test", "olm-crds")).apply(objects, adopt=True)

        def established() -> bool:
            for obj in objects:
                status = self.api.request("GET", crds + obj["metadata"]["name"]).get("status")
                conditions = (status or {}).get("conditions") or []
                if not any(
                    c["type"] == "Established" and c["status"] == "True" for c in conditions
                ):
                    return False
            return True

        wait_for(established, timeout=60, what="OLM's CRDs to be Established")
        with contextlib.suppress(Conflict):
            self.kube.create(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OLM_NAMESPACE}},
            )

    def cluster_names(self) -> set[tuple[str, str]]:
        """(kind, name) of every CRD, ClusterRole, ClusterRoleBinding and webhook configuration."""
        return {
            (r.kind, str(o["metadata"]["name"])) for r in LEFT_BEHIND for o in self.kube.list(r)[0]
        }

    def remove_left_behind(self, before: set[tuple[str, str]]) -> None:
        """Delete what OLM v0 left since ``before`` (but its own CRDs, and the ClusterRoles of
        OperatorGroups, which it keeps while a group exists): it never deletes the CRDs
        it installed, nor the ClusterRoles and bindings a bundle ships, and later tests install
        the same bundles. What pivoter manages (its owner label) is its tests' business.

        Repeated until a pass finds nothing: a test may end with an install OLM v0 is still
        working on (``pivoter adopt --undo`` hands one back), whose syncs under way create a
        CSV, CRDs and roles again after the first pass deleted them."""
        olm = {str(yaml.safe_load(p.read_text())["metadata"]["name"]) for p in _crd_files()}
        seen: list[tuple[str, str]] = []

        def clean() -> bool:
            installs = self._delete_installs()
            leftovers = []
            for resource in LEFT_BEHIND:
                for obj in self.kube.list(resource)[0]:
                    name = str(obj["metadata"]["name"])
                    labels = obj["metadata"].get("labels") or {}
                    if (resource.kind, name) in before or name in olm or PIVOTER_OWNER in labels:
                        continue
                    if labels.get("olm.owner.kind") == "OperatorGroup":
                        continue  # OLM v0 keeps them while the group is, under names of its own
                    leftovers.append((resource.kind, name))
                    with contextlib.suppress(NotFound):
                        self.kube.delete(resource, name)
            seen[:] = leftovers
            return not installs and not leftovers

        wait_for(
            clean,
            timeout=300,
            interval=2.0,
            what="OLM v0's installs and leftovers gone",
            detail=lambda: seen,
        )

    def remove_crds(self, before: set[tuple[str, str]]) -> None:
        """Delete OLM's own CRDs unless they were there ``before`` :meth:`install_crds`, and wait
        until they are gone (their custom resources go with them)."""
        names = [str(yaml.safe_load(p.read_text())["metadata"]["name"]) for p in _crd_files()]
        mine = [n for n in names if ("CustomResourceDefinition", n) not in before]
        for name in mine:
            with contextlib.suppress(NotFound):
                self.kube.delete(CRDS, name)

        def gone() -> bool:
            return not {("CustomResourceDefinition", n) for n in mine} & self.cluster_names()

        wait_for(gone, timeout=120, what=f"OLM's CRDs to be deleted ({mine})")

    def _delete_installs(self) -> list[tuple[str, str]]:
        """Delete every Subscription, InstallPlan and CSV that exists (copies in target
        namespaces go with their original); return what was there (kind, namespace/name)."""
        found: list[tuple[str, str]] = []
        for resource in (SUBSCRIPTIONS, INSTALL_PLANS, CSVS):
            for obj in self.kube.list(resource)[0]:
                meta = obj["metadata"]
                if resource is CSVS and (meta.get("labels") or {}).get("olm.copiedFrom"):
                    continue
                found.append((resource.kind, f"{meta['namespace']}/{meta['name']}"))
                with contextlib.suppress(NotFound):
                    self.kube.delete(resource, meta["name"], meta["namespace"])
        return found

    def start(self) -> None:
        """Start ``olm`` and ``catalog`` (logs under the work directory)."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        # Neither has a flag for its health/metrics address (:8080 on every interface): the
        # second to start logs that the port is taken and carries on, which is all we need.
        commands = {
            "olm": [str(tool("olm")), "--namespace", OLM_NAMESPACE, "--writeStatusName", ""],
            "catalog": [
                str(tool("catalog", "olm")),
                "--namespace",
                OLM_NAMESPACE,
                "--writeStatusName",
                "",
                "--kubeconfig",
                str(self.kubeconfig),
            ],
        }
        for name, argv in commands.items():
            log = (self.workdir / f"{name}.log").open("ab")
            self.processes[name] = subprocess.Popen(
                argv, env=env, stdout=log, stderr=subprocess.STDOUT
            )
            log.close()

    def check_running(self) -> None:
        """Fail with the log's tail if either controller exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(
                    f"OLM's {name} exited with {process.returncode}:\n{self.log_tail(name)}"
                )

    def log_tail(self, name: str, lines: int = 30) -> str:
        """The last lines of a controller's log."""
        path = self.workdir / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Stop both controllers (SIGTERM, then SIGKILL)."""
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    # -- what a user of OLM v0 writes ------------------------------------------------------

    def catalog_source(self, namespace: str, address: str, name: str = "") -> str:
        """A grpc CatalogSource reading ``address`` (an ``opm serve`` on the host)."""
        name = name or unique_name("cs")
        self.kube.create(
            CATALOG_SOURCES,
            {
                "apiVersion": CATALOG_SOURCES.api_version,
                "kind": CATALOG_SOURCES.kind,
                "metadata": {"name": name, "namespace": namespace, "labels": session_labels()},
                "spec": {"sourceType": "grpc", "address": address, "displayName": name},
            },
            namespace,
        )
        return name

    def operator_group(
        self, namespace: str, targets: list[str] | None, *, name: str = "", **spec: Any
    ) -> str:
        """An OperatorGroup in ``namespace`` (``targets`` None: all namespaces)."""
        name = name or unique_name("og")
        body_spec: dict[str, Any] = dict(spec)
        if targets is not None:
            body_spec["targetNamespaces"] = targets
        self.kube.create(
            OPERATOR_GROUPS,
            {
                "apiVersion": OPERATOR_GROUPS.api_version,
                "kind": OPERATOR_GROUPS.kind,
                "metadata": {"name": name, "namespace": namespace, "labels": session_labels()},
                "spec": body_spec,
            },
            namespace,
        )
        return name

    def subscription(
        self,
        namespace: str,
        package: str,
        channel: str,
        source: str,
        *,
        name: str = "",
        **spec: Any,
    ) -> str:
        """A Subscription to ``package`` from the CatalogSource ``source`` (same namespace)."""
        name = name or package
        self.kube.create(
            SUBSCRIPTIONS,
            {
                "apiVersion": SUBSCRIPTIONS.api_version,
                "kind": SUBSCRIPTIONS.kind,
                "metadata": {"name": name, "namespace": namespace, "labels": session_labels()},
                "spec": {
                    "name": package,
                    "channel": channel,
                    "source": source,
                    "sourceNamespace": namespace,
                    **spec,
                },
            },
            namespace,
        )
        return name

    # -- waiting ---------------------------------------------------------------------------

    def wait_installed(self, namespace: str, subscription: str, timeout: float = 180.0) -> str:
        """Wait until the Subscription's installed CSV is ``Succeeded``; return the CSV's name."""
        seen: dict[str, Any] = {}

        def succeeded() -> str | None:
            self.check_running()
            sub = self.kube.get(SUBSCRIPTIONS, subscription, namespace)
            seen["sub"] = sub.get("status")
            installed = str((sub.get("status") or {}).get("installedCSV") or "")
            if not installed:
                return None
            try:
                csv = self.kube.get(CSVS, installed, namespace)
            except NotFound:
                return None
            seen["csv"] = {k: v for k, v in (csv.get("status") or {}).items() if k != "conditions"}
            if (csv.get("status") or {}).get("phase") != "Succeeded":
                return None
            # OLM v0 marks the InstallPlan Complete a moment after the CSV succeeded.
            plans = self.kube.list(INSTALL_PLANS, namespace)[0]
            seen["plans"] = {
                p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in plans
            }
            done = all(phase in ("Complete", "Failed") for phase in seen["plans"].values())
            return installed if done else None

        return str(
            wait_for(
                succeeded,
                timeout=timeout,
                interval=1.0,
                what=f"OLM v0 to install Subscription {namespace}/{subscription}",
                detail=lambda: yaml.safe_dump(seen) + self.log_tail("catalog", 10),
            )
        )

    def wait_csv(
        self, namespace: str, name: str, check: Callable[[dict[str, Any]], bool], what: str
    ) -> dict[str, Any]:
        """Wait until ``check(csv)`` holds."""

        def holds() -> dict[str, Any] | None:
            self.check_running()
            try:
                csv = self.kube.get(CSVS, name, namespace)
            except NotFound:
                return None
            return csv if check(csv) else None

        return dict(wait_for(holds, timeout=180, interval=1.0, what=what))

    def wait_lifted(self, namespace: str, csv: str) -> None:
        """Wait until OLM v0 has lifted every Role it generated from the CSV's ``permissions``
        (owner labels and ``olm.permissions.hash``) to a ClusterRole of the same name, as it
        does for an AllNamespaces install at an OperatorGroup sync after the CSV succeeded.
        The binding's copy comes at a later sync, at times minutes later (docs/registry-v1.md,
        O16); it is not waited for. Other Roles it labels with the CSV (OperatorCondition
        access) stay local."""
        generated = f"olm.owner={csv},olm.owner.namespace={namespace},olm.permissions.hash"
        roles = Resource(RBAC, "Role", "roles", True)
        twin = Resource(RBAC, "ClusterRole", "clusterroles", False)
        missing: list[str] = []

        def lifted() -> bool:
            self.check_running()
            missing.clear()
            for role in self.kube.list(roles, namespace, label_selector=generated)[0]:
                name = role["metadata"]["name"]
                try:
                    self.kube.get(twin, name)
                except NotFound:
                    missing.append(f"ClusterRole {name}")
            return not missing

        wait_for(
            lifted,
            timeout=180,
            interval=1.0,
            what=f"OLM v0 to lift {csv}'s Roles to ClusterRoles",
            detail=lambda: f"missing: {missing}",
        )
