"""OLM v1's ``olm.operatorframework.io/v1`` APIs, ``ClusterExtension`` and ``ClusterCatalog``,
accepted unchanged: their CRDs, condition types, reasons and labels.

The schemas are upstream's, not rewritten: ``pivoter/apis/upstream/`` holds operator-controller's
generated CRDs (the *experimental* variants, a superset of the standard ones, so that
``spec.config`` and ``spec.progressDeadlineMinutes`` exist) exactly as published at
:data:`UPSTREAM`. :func:`cluster_extension_crd` and :func:`cluster_catalog_crd` load them and
add only what pivoter needs to keep between reconciles: optional ``status`` fields whose
descriptions start with ``pivoter:`` (the revision record, the selected group, a pending plan),
plus the :data:`ANNOTATION_CRD_SOURCE` annotation by which ``pivoter run --olmv1=auto`` tells its
own CRDs from OLM's (docs/olm-v1.md). Every upstream field, enum, default, validation rule and
printer column is kept as is; ``tests/olmv1/test_crds.py`` checks that. Used by
:mod:`pivoter.apis.generate` (which writes ``crds/olmv1/``) and the OLM v1 controllers.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

from pivoter.apis._schema import Schema, array, finalize, free_form, integer, obj, string
from pivoter.apis.pivoter import shared_dependencies
from resolver import safedata

__all__ = [
    "ANNOTATION_CRD_SOURCE",
    "API_VERSION",
    "GROUP",
    "LABEL_METADATA_NAME",
    "PIVOTER_STATUS_FIELDS",
    "UPSTREAM",
    "cluster_catalog_crd",
    "cluster_extension_crd",
    "upstream_crd",
]

GROUP = "olm.operatorframework.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

UPSTREAM = "operator-framework/operator-controller v1.11.0 (commit 14472eb5), experimental CRDs"
"""Where the schemas in ``pivoter/apis/upstream/`` come from (unchanged up to df2c201d)."""

ANNOTATION_CRD_SOURCE = "pivoter.io/crd-source"
"""On pivoter's copies of the OLM v1 CRDs: they were installed from pivoter's ``crds/olmv1/``."""

LABEL_METADATA_NAME = "olm.operatorframework.io/metadata.name"
"""Every ClusterCatalog carries its own name under this label (catalogd's webhook sets it)."""

# ClusterCatalog.
SOURCE_TYPE_IMAGE = "Image"
AVAILABLE = "Available"
UNAVAILABLE = "Unavailable"
TYPE_SERVING = "Serving"
REASON_AVAILABLE = "Available"
REASON_UNAVAILABLE = "Unavailable"
REASON_USER_SPECIFIED_UNAVAILABLE = "UserSpecifiedUnavailable"

# Shared by both kinds.
TYPE_INSTALLED = "Installed"
TYPE_PROGRESSING = "Progressing"
REASON_SUCCEEDED = "Succeeded"
REASON_FAILED = "Failed"
REASON_ABSENT = "Absent"
REASON_RETRYING = "Retrying"
REASON_BLOCKED = "Blocked"
REASON_ROLLING_OUT = "RollingOut"
REASON_INVALID_CONFIGURATION = "InvalidConfiguration"
REASON_PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"

# ClusterExtension deprecation conditions.
TYPE_DEPRECATED = "Deprecated"
TYPE_PACKAGE_DEPRECATED = "PackageDeprecated"
TYPE_CHANNEL_DEPRECATED = "ChannelDeprecated"
TYPE_BUNDLE_DEPRECATED = "BundleDeprecated"
REASON_DEPRECATED = "Deprecated"
REASON_NOT_DEPRECATED = "NotDeprecated"
REASON_DEPRECATION_STATUS_UNKNOWN = "DeprecationStatusUnknown"

UPGRADE_CATALOG_PROVIDED = "CatalogProvided"
UPGRADE_SELF_CERTIFIED = "SelfCertified"

_UPSTREAM_DIR = Path(__file__).resolve().parent / "upstream"


@cache
def _load(filename: str) -> Schema:
    text = (_UPSTREAM_DIR / filename).read_text(encoding="utf-8")
    loaded = safedata.load_yaml(text, where=filename)
    assert isinstance(loaded, dict), filename
    return loaded


def upstream_crd(plural: str) -> Schema:
    """operator-controller's own CRD for ``plural`` (``clusterextensions``, ``clustercatalogs``)."""
    return copy.deepcopy(_load(f"{GROUP}_{plural}.yaml"))


def _selected() -> Schema:
    return array(
        "pivoter: the bundles of the group this ClusterExtension installs: its package and, with "
        "the pivoter.io/dependencies annotation set to Install, the dependencies resolved for it.",
        obj(
            "One selected bundle.",
            {
                "package": string("Package."),
                "version": string("Version."),
                "bundle": string("Bundle name."),
                "channel": string("Channel it was selected from."),
                "catalog": string("Catalog it comes from."),
                "requires": array(
                    "Packages of the group whose bundles meet this bundle's requirements.",
                    string("A package name."),
                ),
            },
        ),
    )


PIVOTER_STATUS_FIELDS: dict[str, Schema] = {
    "observedGeneration": integer("pivoter: the generation last processed."),
    "selection": _selected(),
    "selectionHash": string("pivoter: hash of the current selection."),
    "explanation": string("pivoter: why nothing fits, when the request cannot be resolved."),
    "sharedDependencies": shared_dependencies(),
    "pendingPlan": free_form(
        "pivoter: with the pivoter.io/approval annotation set to Manual, the plan waiting for "
        "approval (pivoter plan clusterextension/NAME)."
    ),
    "activeRevision": integer("pivoter: the ResolveSet revision installed now."),
    "lastAttemptedRevision": integer("pivoter: the ResolveSet revision last pivoted to."),
    "lastSuccessfulRevision": integer("pivoter: the last revision whose pivot succeeded."),
    "pivot": free_form(
        "pivoter: the grouped pivot in progress or last finished; a restarted daemon resumes "
        "from it."
    ),
}
"""The optional status fields pivoter adds to ClusterExtension (upstream's are kept as they are)."""


def _versions(crd: Schema) -> list[Schema]:
    versions: list[Schema] = crd["spec"]["versions"]
    return versions


def cluster_extension_crd() -> Schema:
    """``clusterextensions.olm.operatorframework.io``: upstream's schema plus pivoter's optional
    status fields and the source annotation."""
    crd = upstream_crd("clusterextensions")
    crd["metadata"].setdefault("annotations", {})[ANNOTATION_CRD_SOURCE] = UPSTREAM
    for version in _versions(crd):
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        for name, field in PIVOTER_STATUS_FIELDS.items():
            if name not in status["properties"]:
                status["properties"][name] = finalize(field)
    return crd


def cluster_catalog_crd() -> Schema:
    """``clustercatalogs.olm.operatorframework.io``: upstream's schema and the source annotation."""
    crd = upstream_crd("clustercatalogs")
    crd["metadata"].setdefault("annotations", {})[ANNOTATION_CRD_SOURCE] = UPSTREAM
    return crd
