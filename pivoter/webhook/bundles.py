"""Admission for ``Bundle``: the spec is immutable and the source must be well formed.

rukpak's ``vbundles.core.rukpak.io`` rules: a spec change is refused with ``bundle.spec is
immutable``; the source ``type`` must name the one source field that is set; a git ``directory``
and ConfigMap ``path`` stay inside the bundle; referenced ConfigMaps exist in the system namespace
and are immutable (their content must not move under an unpacked Bundle). pivoter's own rule: a
Bundle annotated ``pivoter.io/pull-service-account`` names an account the user may impersonate
(its ``imagePullSecrets`` pull the image, and the content is then served).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pivoter.registries.names import ANNOTATION_PULL_SERVICE_ACCOUNT
from pivoter.webhook.bundledeployments import AccessCheck, check_pull_account
from pivoter.webhook.review import Request, Verdict, allow, deny

__all__ = ["IMMUTABLE_MESSAGE", "validate_bundle", "validate_source"]

IMMUTABLE_MESSAGE = "bundle.spec is immutable"
SOURCE_FIELDS = ("image", "git", "http", "configMaps", "upload")

ConfigMapReader = Callable[[str], Mapping[str, Any] | None]
"""``read(name)``: the ConfigMap ``name`` of the system namespace, or None."""


def _escapes(path: str) -> bool:
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return path.startswith("/") or ".." in parts


def validate_source(
    source: Mapping[str, Any], read_config_map: ConfigMapReader, field: str = "spec.source"
) -> list[str]:
    """Every problem of a Bundle source (empty when it is acceptable)."""
    problems: list[str] = []
    kind = source.get("type")
    present = [name for name in SOURCE_FIELDS if source.get(name) is not None]
    if kind not in SOURCE_FIELDS:
        problems.append(f"{field}.type {kind!r} is not one of {', '.join(SOURCE_FIELDS)}")
    elif present != [kind]:
        problems.append(
            f"{field}.type is {kind!r} but the source fields set are "
            f"{', '.join(present) or 'none'}; set exactly {field}.{kind}"
        )
    git = source.get("git") or {}
    directory = str(git.get("directory") or "")
    if directory and (directory.startswith("../") or _escapes(directory)):
        problems.append(f"{field}.git.directory {directory!r} must stay inside the repository")
    if kind == "configMaps":
        entries = source.get("configMaps") or []
        if not entries:
            problems.append(f"{field}.configMaps must list at least one ConfigMap")
        for i, entry in enumerate(entries):
            name = str((entry.get("configMap") or {}).get("name") or "")
            path = str(entry.get("path") or "")
            if _escapes(path):
                problems.append(f"{field}.configMaps[{i}].path {path!r} leaves the bundle root")
            config_map = read_config_map(name) if name else None
            if config_map is None:
                problems.append(
                    f"{field}.configMaps[{i}]: ConfigMap {name!r} not found in the system namespace"
                )
            elif not config_map.get("immutable"):
                problems.append(
                    f"{field}.configMaps[{i}]: ConfigMap {name!r} is not immutable "
                    "(set immutable: true)"
                )
    return problems


def validate_bundle(
    request: Request, read_config_map: ConfigMapReader, can: AccessCheck
) -> Verdict:
    """The verdict on a Bundle CREATE or UPDATE."""
    spec = request.obj.get("spec") or {}
    if request.operation == "UPDATE" and spec != (request.old.get("spec") or {}):
        return deny(IMMUTABLE_MESSAGE)
    annotations = (request.obj.get("metadata") or {}).get("annotations") or {}
    old = ((request.old or {}).get("metadata") or {}).get("annotations") or {}
    unchanged = old.get(ANNOTATION_PULL_SERVICE_ACCOUNT)
    refused = check_pull_account(
        request,
        annotations,
        can,
        granted=str(unchanged or "") if request.operation == "UPDATE" else "",
    )
    if refused is not None:
        return refused
    if request.operation == "UPDATE":
        return allow()  # unchanged spec: already validated at creation
    problems = validate_source(spec.get("source") or {}, read_config_map)
    return deny("; ".join(problems)) if problems else allow()
