"""Differences between what OLM v0 and pivoter left on the cluster for one bundle, and the
documented reasons they may differ.

:func:`compare` pairs the normalised objects of both installs (tests/olmv0/snapshot.py) by kind,
namespace and name, or, where the two name an object differently, by content (RBAC by rules and
subjects, webhook configurations by webhook name), and lists every field that differs as a
:class:`Difference`. :data:`DOCUMENTED` holds one entry per difference docs/registry-v1.md
("Compared with OLM v0") explains; :func:`undocumented` returns what none of them covers. Used
by tests/olmv0/test_differential_cluster.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.olmv0.snapshot import Key

MISSING = "<absent>"


@dataclass(frozen=True)
class Difference:
    """One field of one object that differs (``path`` "" and a value :data:`MISSING`: the
    object exists on one side only; ``path`` "metadata.name": paired by content)."""

    kind: str
    name: str
    path: str
    olm: str
    pivoter: str

    def __str__(self) -> str:
        where = f" {self.path}" if self.path else ""
        return f"{self.kind} {self.name}{where}: OLM {self.olm} / pivoter {self.pivoter}"


def _text(value: Any) -> str:
    if value is None:
        return MISSING
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _walk(path: str, olm: Any, piv: Any, out: list[tuple[str, Any, Any]]) -> None:
    if olm == piv:
        return
    if isinstance(olm, dict) and isinstance(piv, dict):
        for key in sorted(set(olm) | set(piv)):
            _walk(f"{path}.{key}" if path else str(key), olm.get(key), piv.get(key), out)
        return
    if isinstance(olm, list) and isinstance(piv, list) and _named(olm) and _named(piv):
        by_olm = {i["name"]: i for i in olm}
        by_piv = {i["name"]: i for i in piv}
        for name in sorted(set(by_olm) | set(by_piv)):
            _walk(f"{path}[{name}]", by_olm.get(name), by_piv.get(name), out)
        return
    out.append((path, olm, piv))


def field_differences(olm: Any, piv: Any) -> list[tuple[str, Any, Any]]:
    """Every (path, left, right) where two JSON values differ (lists of named items by name)."""
    found: list[tuple[str, Any, Any]] = []
    _walk("", olm, piv, found)
    return found


def _named(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(i, dict) and "name" in i for i in items)


def _content(obj: Mapping[str, Any]) -> str:
    """What identifies an object whose two installs name it differently."""
    kind = obj["kind"]
    namespace = (obj.get("metadata") or {}).get("namespace", "")
    if kind in ("Role", "ClusterRole"):
        return json.dumps([kind, namespace, obj.get("rules")], sort_keys=True)
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        ref = obj.get("roleRef") or {}
        # A binding to a role neither installer generates (system:auth-delegator) pairs only
        # with one to the same role.
        fixed = ref.get("name") if str(ref.get("name", "")).startswith("system:") else ""
        return json.dumps([kind, namespace, obj.get("subjects"), ref.get("kind"), fixed])
    if kind.endswith("WebhookConfiguration"):
        return json.dumps([kind, [w.get("name") for w in obj.get("webhooks") or []]])
    return ""


def compare(
    olm: Mapping[Key, dict[str, Any]], piv: Mapping[Key, dict[str, Any]]
) -> list[Difference]:
    """Every difference between the two installs."""
    differences: list[Difference] = []
    only_olm = {k: v for k, v in olm.items() if k not in piv}
    only_piv = {k: v for k, v in piv.items() if k not in olm}
    pairs = [(k, olm[k], piv[k]) for k in sorted(set(olm) & set(piv))]
    # Pair what both have under different names, by content (names in `pairs` are OLM's).
    by_content: dict[str, list[Key]] = {}
    for key, obj in sorted(only_piv.items()):
        if _content(obj):
            by_content.setdefault(_content(obj), []).append(key)
    for key, obj in sorted(only_olm.items()):
        candidates = by_content.get(_content(obj)) if _content(obj) else None
        if candidates:
            other = candidates.pop(0)
            differences.append(Difference(key[0], key[2], "metadata.name", key[2], other[2]))
            pairs.append((key, obj, only_piv.pop(other)))
            del only_olm[key]
    for key in sorted(only_olm):
        differences.append(Difference(key[0], _where(key), "", "present", MISSING))
    for key in sorted(only_piv):
        differences.append(Difference(key[0], _where(key), "", MISSING, "present"))
    for key, left, right in pairs:
        a = {k: v for k, v in left.items() if k != "metadata"} | {"metadata": _meta(left)}
        b = {k: v for k, v in right.items() if k != "metadata"} | {"metadata": _meta(right)}
        found: list[tuple[str, Any, Any]] = []
        _walk("", a, b, found)
        differences += [
            Difference(key[0], _where(key), path, _text(x), _text(y)) for path, x, y in found
        ]
    return differences


def _where(key: Key) -> str:
    return f"{key[1]}/{key[2]}" if key[1] else key[2]


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    meta.pop("name", None)
    return meta


@dataclass(frozen=True)
class Documented:
    """A difference docs/registry-v1.md explains: its id there, what it matches and why."""

    id: str
    kind: str
    """Regular expression over the object's kind."""
    path: str
    """Regular expression over the field path ("" for a whole object on one side)."""
    why: str
    side: str = ""
    """"olm": only when OLM has it; "pivoter": only when pivoter has it; "": either."""
    name: str = ".*"
    """Regular expression over the object's name (``NAMESPACE/NAME`` when namespaced)."""

    def covers(self, difference: Difference) -> bool:
        """Whether this entry explains ``difference``."""
        if not re.fullmatch(self.kind, difference.kind):
            return False
        if not re.fullmatch(self.name, difference.name):
            return False
        if not re.fullmatch(self.path, difference.path):
            return False
        if self.side == "olm" and difference.olm == MISSING:
            return False
        return not (self.side == "pivoter" and difference.pivoter == MISSING)


RBAC = "Role|RoleBinding|ClusterRole|ClusterRoleBinding"
WEBHOOKS = "ValidatingWebhookConfiguration|MutatingWebhookConfiguration"
OLM_MARKS = (
    r"metadata\.labels\.(olm\.(owner|owner\.kind|owner\.namespace|managed|permissions\.hash|"
    r"deployment-spec-hash|webhook-description-generate-name|webhook-description-hash|copiedFrom)"
    r"|operators\.coreos\.com/.+)|metadata\.ownerReferences"
)
DOCUMENTED: list[Documented] = [
    Documented("O1", ".+", OLM_MARKS, "OLM v0 marks what it owns", side="olm"),
    Documented(
        "O1",
        ".+",
        r"metadata\.labels\.core\.rukpak\.io/owner-(kind|name)",
        "pivoter marks what it owns",
        side="pivoter",
    ),
    Documented(
        "O1",
        "CustomResourceDefinition",
        r"metadata\.annotations(\.operatorframework\.io/installed-alongside-.+)?",
        "OLM v0 records the CSV a CRD was installed alongside",
        side="olm",
    ),
    Documented("O2", RBAC, r"metadata\.name|roleRef\.name", "generated RBAC names"),
    Documented("O2", WEBHOOKS, r"metadata\.name", "webhook configuration names"),
    Documented("O3", "ClusterRole", "", "OperatorGroup roles", side="olm", name=r"olm\.og\..+"),
    Documented(
        "O4",
        "ClusterRole",
        "",
        "aggregated roles for the provided APIs",
        side="olm",
        name=r".+\..+-v[0-9a-z]+-(admin|edit|view|crdview)",
    ),
    Documented(
        "O5",
        "Role|RoleBinding",
        "",
        "OperatorCondition access",
        side="olm",
        name=r"[^/]+/[a-z0-9-]+\.v[0-9]+\.[0-9]+\.[0-9]+",
    ),
    Documented(
        "O6",
        "Role|RoleBinding",
        "",
        "certificate Secret reader",
        side="olm",
        name=r".+-service-cert",
    ),
    Documented(
        "O7",
        "ClusterRoleBinding|RoleBinding",
        "",
        "delegated authentication for webhook servers",
        side="olm",
        name=r"(kube-system/)?.+-service-(system:auth-delegator|auth-reader)",
    ),
    Documented(
        "O8",
        "Role|RoleBinding",
        "",
        "AllNamespaces: OLM v0 keeps the namespaced role beside its cluster-wide copy",
        side="olm",
        name=r"[^/]+/.+-[0-9A-Za-z]{20,}",
    ),
    Documented(
        "O16",
        "ClusterRoleBinding",
        "",
        "AllNamespaces: OLM v0 lifts a permissions binding at a later sync",
        side="pivoter",
    ),
    Documented("O9", "Deployment", r"spec\.revisionHistoryLimit", "ReplicaSets kept"),
    Documented(
        "O10",
        "Deployment",
        r"spec\.template\.metadata\.annotations\."
        r"(olm\.operatorGroup|olm\.operatorNamespace|operatorframework\.io/properties)",
        "annotations OLM v0's controllers add to the CSV, copied to the pods",
        side="olm",
    ),
    Documented(
        "O11",
        "Deployment",
        r"spec\.template\.spec\.(init)?[cC]ontainers\[[^]]+\]\.env(\[OPERATOR_CONDITION_NAME\])?",
        "OPERATOR_CONDITION_NAME",
        side="olm",
    ),
    Documented(
        "O12",
        "Deployment",
        r"spec\.template\.spec\.volumes\[[^]]+\]",
        "a volume the bundle meant for its certificate, left unmounted",
        side="olm",
    ),
    Documented("O13", "Secret", r"data", "certificate Secret keys: pivoter adds ca.crt"),
    Documented(
        "O13",
        "Secret",
        r"metadata\.annotations\.(olmcahash|pivoter\.io/certificate-not-after)",
        "certificate Secret annotations",
    ),
    Documented(
        "O14",
        "CustomResourceDefinition",
        r"spec\.conversion\.webhook\.clientConfig(\..+)?",
        "conversion webhook wiring OLM v0 did not write",
    ),
    Documented(
        "O15",
        WEBHOOKS,
        r"webhooks\[[^]]+\]\.namespaceSelector(\..+)?",
        "admission webhooks scoped by namespace name, not by OperatorGroup label",
    ),
]
"""One entry per row of docs/registry-v1.md's table "Compared with OLM v0" (the id is the
row's)."""


def undocumented(differences: list[Difference]) -> list[Difference]:
    """The differences no :data:`DOCUMENTED` entry covers."""
    return [d for d in differences if not any(e.covers(d) for e in DOCUMENTED)]
