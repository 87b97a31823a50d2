"""Names, labels and annotations of the child BundleDeployments a pivot creates: pure functions.

One child BundleDeployment installs one bundle of an input's ResolveSet. Its name is
``<input>-<package>`` (the input's own package, the one a PlatformOperator or a ClusterExtension
names, gets the input's name, as their reference controllers do) and fits rukpak's 45-character
limit: what does not fit is cut and followed by ten hex digits of sha256 of the full
``<Kind>/<input>/<package>``, so two children never share a name. Used by
:mod:`pivoter.pivot.children` and the input controllers.
"""

from __future__ import annotations

import hashlib
import re

from pivoter.apis import rukpak
from pivoter.resolvesets import LABEL_INPUT_KIND, LABEL_INPUT_NAME, InputRef, label_value

__all__ = [
    "ANNOTATION_BUNDLE",
    "ANNOTATION_INPUT",
    "ANNOTATION_PACKAGE",
    "ANNOTATION_REVISION",
    "ANNOTATION_VERSION",
    "LABEL_MANAGED_BY",
    "LABEL_PACKAGE",
    "MAX_CHILD_NAME",
    "child_labels",
    "child_name",
    "children_selector",
]

MAX_CHILD_NAME = rukpak.BUNDLE_DEPLOYMENT_NAME_MAX
LABEL_PACKAGE = "pivoter.io/package"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
ANNOTATION_INPUT = "pivoter.io/input"
ANNOTATION_PACKAGE = "pivoter.io/package"
ANNOTATION_BUNDLE = "pivoter.io/bundle"
ANNOTATION_VERSION = "pivoter.io/version"
ANNOTATION_REVISION = "pivoter.io/revision"
_HASH_CHARS = 10


def child_name(ref: InputRef, package: str, *, primary: bool = False) -> str:
    """The name of the child BundleDeployment of ``package`` for input ``ref``.

    ``primary``: the package is the input's own (a PlatformOperator's or a ClusterExtension's: the
    spec reader of the kind says which, ``InputSpec.primary_package``), so the child is named
    after the input alone.
    """
    raw = ref.name if primary else f"{ref.name}-{package}"
    wanted = re.sub(r"[^a-z0-9-]", "-", raw.lower())
    if len(wanted) <= MAX_CHILD_NAME and wanted == raw:
        return wanted
    digest = hashlib.sha256(f"{ref.kind}/{ref.name}/{package}".encode()).hexdigest()
    stem = wanted[: MAX_CHILD_NAME - _HASH_CHARS - 1].strip("-")
    return f"{stem}-{digest[:_HASH_CHARS]}" if stem else digest[:MAX_CHILD_NAME]


def child_labels(ref: InputRef, package: str) -> dict[str, str]:
    """The labels that link a child to its input and package (values shortened to fit)."""
    return {
        LABEL_INPUT_KIND: ref.kind_label,
        LABEL_INPUT_NAME: label_value(ref.name),
        LABEL_PACKAGE: label_value(package),
        LABEL_MANAGED_BY: "pivoter",
    }


def children_selector(ref: InputRef) -> str:
    """The label selector of every child of ``ref`` (the ``pivoter.io/input`` annotation tells
    inputs apart whose shortened labels collide)."""
    return f"{LABEL_INPUT_KIND}={ref.kind_label},{LABEL_INPUT_NAME}={label_value(ref.name)}"
