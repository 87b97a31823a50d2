"""The typed views of the input objects (:mod:`pivoter.apis.views`): every field and its default,
the spec readers built on them, and hostile shapes, which raise :class:`FieldError` naming the
field, never a TypeError, KeyError or AttributeError.

The hostile walk replaces every node of a complete object of each kind, one at a time, with each
of a set of hostile values, and every meaningful annotation with hostile texts; the view and the
spec reader of the kind must each either read the result or refuse it with a FieldError."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from pivoter.apis import olmv1, platform
from pivoter.apis import pivoter as api
from pivoter.apis.inputs import parse_input
from pivoter.apis.views import (
    ANNOTATION_ADOPT_EXISTING,
    ANNOTATION_APPROVAL,
    ANNOTATION_APPROVED_REVISION,
    ANNOTATION_AUTO_ROLLBACK,
    ANNOTATION_DEPENDENCIES,
    ANNOTATION_HISTORY_LIMIT,
    ANNOTATION_PINNED_REVISION,
    ANNOTATION_RETRY,
    UPGRADE_POLICIES,
    CatalogFilter,
    ClusterExtensionView,
    FieldError,
    InputMeta,
    LabelSelector,
    PlatformOperatorView,
    RequestedPackage,
    ResolutionView,
    SelectorRequirement,
    ServiceAccountRef,
)
from pivoter.inputs import from_resolution
from pivoter.olmv1.extensions import (
    INVALID_CONFIGURATION,
    OLMV1_PROFILE,
    extension_spec,
    package_of,
)
from pivoter.platformoperators import PlatformOperatorSettings, platform_operator_kind
from pivoter.resolvesets import InputRef

HASH = "sha256:" + "ab" * 32


def _resolution() -> dict[str, Any]:
    """A Resolution that sets every field its view reads."""
    return {
        "apiVersion": api.API_VERSION,
        "kind": "Resolution",
        "metadata": {
            "name": "web",
            "generation": 4,
            "annotations": {
                ANNOTATION_APPROVED_REVISION: "7",
                ANNOTATION_RETRY: "again",
                "unrelated.example.com/note": "anything",
            },
        },
        "spec": {
            "packages": [
                {
                    "name": "db",
                    "channel": "fast",
                    "versionRange": "^1",
                    "upgradePolicy": "SelfCertified",
                    "config": {"targetNamespaces": ["team-a"]},
                },
                {"name": "cache"},
            ],
            "catalogSelector": {
                "matchLabels": {"tier": "prod"},
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a", "b"]},
                    {"key": "beta", "operator": "DoesNotExist"},
                ],
            },
            "installNamespace": "ops",
            "serviceAccount": {"name": "installer", "namespace": "ops"},
            "approval": "Manual",
            "approvedRevision": 5,
            "pinnedRevision": 3,
            "paused": True,
            "adoptExisting": True,
            "autoRollback": False,
            "progressDeadlineSeconds": 120,
            "historyLimit": 4,
            "deletionPolicy": "Orphan",
        },
    }


def _platform_operator() -> dict[str, Any]:
    return {
        "apiVersion": platform.API_VERSION,
        "kind": "PlatformOperator",
        "metadata": {
            "name": "cert",
            "generation": 2,
            "annotations": {ANNOTATION_PINNED_REVISION: "6", ANNOTATION_RETRY: "now"},
        },
        "spec": {"package": {"name": "cert-manager"}},
    }


def _cluster_extension() -> dict[str, Any]:
    """A ClusterExtension that sets every field and annotation its view reads."""
    return {
        "apiVersion": olmv1.API_VERSION,
        "kind": "ClusterExtension",
        "metadata": {
            "name": "argocd",
            "generation": 3,
            "annotations": {
                ANNOTATION_DEPENDENCIES: "Install",
                ANNOTATION_APPROVAL: "Manual",
                ANNOTATION_APPROVED_REVISION: HASH,
                ANNOTATION_AUTO_ROLLBACK: "TRUE",
                ANNOTATION_HISTORY_LIMIT: "3",
                ANNOTATION_ADOPT_EXISTING: "true",
                ANNOTATION_PINNED_REVISION: "2",
                ANNOTATION_RETRY: "x",
            },
        },
        "spec": {
            "namespace": "argocd",
            "serviceAccount": {"name": "installer"},
            "source": {
                "sourceType": "Catalog",
                "catalog": {
                    "packageName": "argocd-operator",
                    "channels": ["preview", "stable"],
                    "version": ">=3.0, <3.6",
                    "upgradeConstraintPolicy": "SelfCertified",
                    "selector": {
                        "matchLabels": {"team": "gitops"},
                        "matchExpressions": [{"key": "tier", "operator": "Exists"}],
                    },
                },
            },
            "config": {"configType": "Inline", "inline": {"watchNamespace": "team-a"}},
            "install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}},
            "progressDeadlineMinutes": 15,
        },
    }


def _po_spec(obj: Mapping[str, Any]) -> Any:
    return platform_operator_kind(PlatformOperatorSettings()).spec_of(obj)


KINDS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[Mapping[str, Any]], Any]]] = {
    "Resolution": (_resolution, from_resolution),
    "PlatformOperator": (_platform_operator, _po_spec),
    "ClusterExtension": (_cluster_extension, extension_spec),
}
"""Each kind: a complete object, and the spec reader built on its view."""


def _refused(obj: Mapping[str, Any], kind: str = "") -> FieldError:
    with pytest.raises(FieldError) as caught:
        parse_input(kind or str(obj["kind"]), obj)
    return caught.value


# ----------------------------------------------------------------------------- every field


def test_resolution_view_reads_every_field() -> None:
    view = ResolutionView.parse(_resolution())
    assert view == ResolutionView(
        meta=InputMeta(name="web", generation=4, retry="again"),
        packages=(
            RequestedPackage(
                name="db",
                channel="fast",
                version_range="^1",
                upgrade_policy="SelfCertified",
                config={"targetNamespaces": ["team-a"]},
            ),
            RequestedPackage(name="cache"),
        ),
        catalog_selector=LabelSelector(
            match_labels={"tier": "prod"},
            match_expressions=(
                SelectorRequirement("zone", "In", ("a", "b")),
                SelectorRequirement("beta", "DoesNotExist"),
            ),
        ),
        install_namespace="ops",
        service_account=ServiceAccountRef(name="installer", namespace="ops"),
        approval="Manual",
        approved="7",  # the annotation wins over spec.approvedRevision
        pinned=3,
        paused=True,
        adopt_existing=True,
        auto_rollback=False,
        progress_deadline_seconds=120,
        history_limit=4,
        deletion_policy="Orphan",
    )


def test_resolution_view_defaults() -> None:
    view = ResolutionView.parse({"metadata": {"name": "x"}, "spec": {"packages": [{"name": "p"}]}})
    assert view == ResolutionView(meta=InputMeta(name="x"), packages=(RequestedPackage(name="p"),))
    assert (view.approval, view.auto_rollback, view.deletion_policy) == (
        "Automatic",
        True,
        "Delete",
    )
    assert view.progress_deadline_seconds == api.DEFAULT_PROGRESS_DEADLINE_SECONDS
    assert view.history_limit == api.DEFAULT_HISTORY_LIMIT
    assert view.packages[0].upgrade_policy == "CatalogProvided"
    assert view.packages[0].config is None
    assert (view.pinned, view.approved, view.meta.retry, view.meta.generation) == (None, "", "", 0)


def test_nulls_and_empty_values_are_the_defaults() -> None:
    obj = {
        "metadata": {"name": "x", "generation": None, "annotations": None},
        "spec": {
            "packages": [{"name": "p", "channel": None, "config": {}, "upgradePolicy": None}],
            "pinnedRevision": None,
            "approvedRevision": None,
            "catalogSelector": None,
            "serviceAccount": None,
            "approval": "",
            "paused": None,
            "autoRollback": None,
        },
    }
    assert ResolutionView.parse(obj) == ResolutionView(
        meta=InputMeta(name="x"), packages=(RequestedPackage(name="p"),)
    )


def test_spec_approved_revision_applies_without_the_annotation() -> None:
    obj = _resolution()
    del obj["metadata"]["annotations"][ANNOTATION_APPROVED_REVISION]
    assert ResolutionView.parse(obj).approved == "5"
    obj["metadata"]["annotations"][ANNOTATION_APPROVED_REVISION] = HASH
    assert ResolutionView.parse(obj).approved == HASH
    obj["metadata"]["annotations"][ANNOTATION_APPROVED_REVISION] = "007"
    assert ResolutionView.parse(obj).approved == "7"  # compared with str(revision)


def test_platform_operator_view_reads_every_field() -> None:
    assert PlatformOperatorView.parse(_platform_operator()) == PlatformOperatorView(
        meta=InputMeta(name="cert", generation=2, retry="now"), package="cert-manager", pinned=6
    )
    minimal = {"metadata": {"name": "p"}, "spec": {"package": {"name": "q"}}}
    assert PlatformOperatorView.parse(minimal) == PlatformOperatorView(InputMeta("p"), "q")


def test_cluster_extension_view_reads_every_field() -> None:
    assert ClusterExtensionView.parse(_cluster_extension()) == ClusterExtensionView(
        meta=InputMeta(name="argocd", generation=3, retry="x"),
        namespace="argocd",
        catalog=CatalogFilter(
            package_name="argocd-operator",
            channels=("preview", "stable"),
            version=">=3.0, <3.6",
            upgrade_constraint_policy="SelfCertified",
            selector=LabelSelector(
                match_labels={"team": "gitops"},
                match_expressions=(SelectorRequirement("tier", "Exists"),),
            ),
        ),
        service_account="installer",
        inline_config={"watchNamespace": "team-a"},
        crd_upgrade_safety="None",
        progress_deadline_minutes=15,
        dependencies="Install",
        approval="Manual",
        approved=HASH,
        auto_rollback=True,
        history_limit=3,
        adopt_existing=True,
        pinned=2,
    )


def test_cluster_extension_view_defaults() -> None:
    obj = {
        "metadata": {"name": "e"},
        "spec": {
            "namespace": "ns",
            "source": {"sourceType": "Catalog", "catalog": {"packageName": "p"}},
        },
    }
    view = ClusterExtensionView.parse(obj)
    assert view == ClusterExtensionView(
        meta=InputMeta(name="e"), namespace="ns", catalog=CatalogFilter(package_name="p")
    )
    assert (view.dependencies, view.approval, view.crd_upgrade_safety) == (
        "Refuse",
        "Automatic",
        "Strict",
    )
    assert (view.auto_rollback, view.adopt_existing, view.history_limit) == (
        False,
        False,
        api.DEFAULT_HISTORY_LIMIT,
    )
    assert (view.service_account, view.inline_config, view.progress_deadline_minutes) == (
        "",
        None,
        None,
    )


def test_upgrade_policies_are_olm_v1s() -> None:
    assert UPGRADE_POLICIES == (olmv1.UPGRADE_CATALOG_PROVIDED, olmv1.UPGRADE_SELF_CERTIFIED)


def test_a_selector_is_written_back_as_the_api_writes_it() -> None:
    view = ResolutionView.parse(_resolution())
    assert view.catalog_selector is not None
    assert view.catalog_selector.to_dict() == _resolution()["spec"]["catalogSelector"]
    assert LabelSelector(match_labels={}).to_dict() == {}


def test_parse_input_reads_each_kind_and_the_pin_of_each() -> None:
    pins = {kind: parse_input(kind, make()).pinned for kind, (make, _) in KINDS.items()}
    assert pins == {"Resolution": 3, "PlatformOperator": 6, "ClusterExtension": 2}
    assert _refused(_resolution(), "Catalog").path == "kind"


def test_a_resolution_ignores_the_pin_annotation() -> None:
    """A Resolution is pinned by ``spec.pinnedRevision`` only (``pivoter rollback`` writes it
    there); the annotation is the other kinds'."""
    obj = _resolution()
    del obj["spec"]["pinnedRevision"]
    obj["metadata"]["annotations"][ANNOTATION_PINNED_REVISION] = "2"
    assert ResolutionView.parse(obj).pinned is None


# ----------------------------------------------------------------------------- immutability


def test_views_are_immutable_and_independent_of_the_object() -> None:
    obj = _resolution()
    view = ResolutionView.parse(obj)
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.paused = False  # type: ignore[misc]
    config = view.packages[0].config
    assert config is not None
    with pytest.raises(TypeError):
        config["x"] = 1  # type: ignore[index]
    selector = view.catalog_selector
    assert selector is not None
    with pytest.raises(TypeError):
        selector.match_labels["tier"] = "dev"  # type: ignore[index]
    obj["spec"]["packages"][0]["config"]["added"] = True
    obj["spec"]["catalogSelector"]["matchLabels"]["tier"] = "dev"
    assert "added" not in config
    assert selector.match_labels == {"tier": "prod"}
    assert obj == {**_resolution(), "spec": obj["spec"]}  # parse changed nothing


# ----------------------------------------------------------------------------- spec readers


def test_from_resolution_builds_the_input_spec_from_the_view() -> None:
    spec = from_resolution(_resolution())
    assert spec.ref == InputRef("Resolution", "web")
    assert spec.packages == ["db", "cache"]
    db = spec.requests[0]
    assert (db.channels, db.version_range, db.upgrade_policy) == (("fast",), "^1", "SelfCertified")
    assert spec.requests[1].channels == ()
    assert spec.catalog_selector == _resolution()["spec"]["catalogSelector"]
    assert spec.service_account == {"name": "installer", "namespace": "ops"}
    assert (spec.approval, spec.approved, spec.pinned, spec.paused) == ("Manual", "7", 3, True)
    assert (spec.auto_rollback, spec.progress_deadline, spec.history_limit) == (False, 120.0, 4)
    assert (spec.retry_token, spec.generation) == ("again", 4)
    assert spec.child_settings is not None
    assert spec.child_settings.config_for(False, "db") == {
        "installNamespace": "ops",
        "targetNamespaces": ["team-a"],
    }
    assert spec.child_settings.adopt_existing


def test_platform_operator_spec_from_the_view() -> None:
    settings = PlatformOperatorSettings(
        service_account={"name": "sa", "namespace": "ns"},
        catalog_selector={"matchLabels": {"a": "b"}},
    )
    spec = platform_operator_kind(settings).spec_of(_platform_operator())
    assert spec.ref == InputRef("PlatformOperator", "cert")
    assert (spec.packages, spec.primary_package, spec.pinned) == (
        ["cert-manager"],
        "cert-manager",
        6,
    )
    assert (spec.retry_token, spec.generation) == ("now", 2)
    assert spec.service_account == settings.service_account
    assert spec.catalog_selector == settings.catalog_selector
    assert (spec.approval, spec.auto_rollback) == ("Automatic", True)


def test_extension_spec_from_the_view() -> None:
    spec = extension_spec(_cluster_extension())
    assert spec.ref == InputRef("ClusterExtension", "argocd")
    (request,) = spec.requests
    assert request.channels == ("preview", "stable")
    assert spec.catalog_selector == {
        "matchLabels": {"team": "gitops"},
        "matchExpressions": [{"key": "tier", "operator": "Exists"}],
    }
    assert spec.service_account == {"namespace": "argocd", "name": "installer"}
    assert (spec.profile, spec.approval, spec.approved) == ("pivoter", "Manual", HASH)
    assert (spec.auto_rollback, spec.history_limit, spec.pinned) == (True, 3, 2)
    assert (spec.progress_deadline, spec.retry_token) == (900.0, "x#3")
    assert spec.child_settings is not None
    assert spec.child_settings.adopt_existing
    assert spec.child_settings.preflight == {"crdUpgradeSafety": {"disabled": True}}
    assert package_of(_cluster_extension()) == "argocd-operator"
    plain = _cluster_extension()
    plain["metadata"]["annotations"] = {}
    assert extension_spec(plain).profile == OLMV1_PROFILE


def test_unknown_inline_keys_still_hold_the_extension_back() -> None:
    """Keys of ``spec.config.inline`` are not the view's to refuse: OLM v1 accepts the object
    and reports InvalidConfiguration; so does the reader, through ``InputSpec.extra``."""
    obj = _cluster_extension()
    obj["spec"]["config"]["inline"] = {"installNamespace": "x", "watchNamespace": "y"}
    spec = extension_spec(obj)
    assert spec.paused
    assert 'unknown field "installNamespace"' in spec.extra[INVALID_CONFIGURATION]
    assert spec.child_settings is not None
    assert spec.child_settings.primary_config == {"watchNamespace": "y"}


# ----------------------------------------------------------------------------- clear errors


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``obj`` with the field at ``path`` (dots; ``[n]`` for an item) set to ``value``."""
    out = copy.deepcopy(obj)
    keys: list[str | int] = [
        int(part[1:-1]) if part.startswith("[") else part
        for part in re.findall(r"\[\d+\]|[^.\[\]]+", path)
    ]
    node: Any = out
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return out


def _annotated(obj: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("annotations", {})[key] = value
    return out


CE, RES, PO = _cluster_extension(), _resolution(), _platform_operator()

PIN = f"metadata.annotations[{ANNOTATION_PINNED_REVISION}]"
INT64 = "must be at most 9223372036854775807"

CLEAR_ERRORS: list[tuple[dict[str, Any], str, str]] = [
    # (object, the field named, what is wrong with it)
    (
        _with(CE, "spec.source.catalog.version", [">=1"]),
        "spec.source.catalog.version",
        "expected a string, got a list",
    ),
    (_with(CE, "spec.source.catalog", ["x"]), "spec.source.catalog", "expected a map, got a list"),
    (
        _with(CE, "spec.source.catalog.channels", "stable"),
        "spec.source.catalog.channels",
        "expected a list, got 'stable'",
    ),
    (
        _with(CE, "spec.source.catalog.channels", ["a", None]),
        "spec.source.catalog.channels[1]",
        "expected a string, got null",
    ),
    (
        _with(CE, "spec.source.catalog.packageName", None),
        "spec.source.catalog.packageName",
        "required",
    ),
    (
        _with(CE, "spec.source.catalog.upgradeConstraintPolicy", "Never"),
        "spec.source.catalog.upgradeConstraintPolicy",
        "must be one of CatalogProvided, SelfCertified, got 'Never'",
    ),
    (
        _with(CE, "spec.source.catalog.selector.matchLabels", {"team": 1}),
        "spec.source.catalog.selector.matchLabels[team]",
        "expected a string, got 1",
    ),
    (
        _with(CE, "spec.source.sourceType", "Image"),
        "spec.source.sourceType",
        "must be Catalog, got 'Image'",
    ),
    (_with(CE, "spec.namespace", 7), "spec.namespace", "expected a string, got 7"),
    (
        _with(CE, "spec.config.configType", "File"),
        "spec.config.configType",
        "must be Inline, got 'File'",
    ),
    (
        _with(CE, "spec.config.inline", ["watchNamespace"]),
        "spec.config.inline",
        "expected a map, got a list",
    ),
    (
        _with(CE, "spec.install.preflight.crdUpgradeSafety.enforcement", "Off"),
        "spec.install.preflight.crdUpgradeSafety.enforcement",
        "must be one of Strict, None, got 'Off'",
    ),
    (
        _with(CE, "spec.progressDeadlineMinutes", "15"),
        "spec.progressDeadlineMinutes",
        "expected a whole number, got '15'",
    ),
    (
        _with(CE, "spec.progressDeadlineMinutes", 0),
        "spec.progressDeadlineMinutes",
        "must be at least 1, got 0",
    ),
    (
        _with(CE, "spec.serviceAccount", "installer"),
        "spec.serviceAccount",
        "expected a map, got 'installer'",
    ),
    (_with(CE, "spec", []), "spec", "expected a map, got a list"),
    (_with(CE, "metadata.name", None), "metadata.name", "required"),
    (_with(CE, "metadata.name", ""), "metadata.name", "required"),
    (_with(CE, "metadata.generation", -1), "metadata.generation", "must be at least 0, got -1"),
    (
        _with(CE, "metadata.generation", True),
        "metadata.generation",
        "expected a whole number, got true",
    ),
    (
        _with(CE, "metadata.annotations", ["a"]),
        "metadata.annotations",
        "expected a map, got a list",
    ),
    (
        _annotated(CE, ANNOTATION_PINNED_REVISION, "-1"),
        PIN,
        "expected a whole number from 1, got '-1'",
    ),
    (_annotated(CE, ANNOTATION_PINNED_REVISION, "0"), PIN, "must be at least 1, got 0"),
    (_annotated(CE, ANNOTATION_PINNED_REVISION, "9" * 5000), PIN, f"{INT64}, got 5000 digits"),
    (_annotated(CE, ANNOTATION_PINNED_REVISION, str(2**63)), PIN, f"{INT64}, got {2**63}"),
    (_annotated(CE, ANNOTATION_PINNED_REVISION, 3), PIN, "expected a string, got 3"),
    (
        _annotated(CE, ANNOTATION_HISTORY_LIMIT, "ten"),
        f"metadata.annotations[{ANNOTATION_HISTORY_LIMIT}]",
        "expected a whole number from 1, got 'ten'",
    ),
    (
        _annotated(CE, ANNOTATION_APPROVAL, "manual"),
        f"metadata.annotations[{ANNOTATION_APPROVAL}]",
        "must be one of Automatic, Manual, got 'manual'",
    ),
    (
        _annotated(CE, ANNOTATION_AUTO_ROLLBACK, "yes"),
        f"metadata.annotations[{ANNOTATION_AUTO_ROLLBACK}]",
        "must be one of true, false, got 'yes'",
    ),
    (
        _annotated(CE, ANNOTATION_DEPENDENCIES, "All"),
        f"metadata.annotations[{ANNOTATION_DEPENDENCIES}]",
        "must be one of Refuse, Install, got 'All'",
    ),
    (
        _annotated(CE, ANNOTATION_APPROVED_REVISION, "sha256:nope"),
        f"metadata.annotations[{ANNOTATION_APPROVED_REVISION}]",
        "expected a revision number or a sha256: selection hash, got 'sha256:nope'",
    ),
    (_with(RES, "spec.packages", []), "spec.packages", "required: at least one package"),
    (_with(RES, "spec.packages", {"name": "db"}), "spec.packages", "expected a list, got a map"),
    (_with(RES, "spec.packages[1]", None), "spec.packages[1]", "expected a map, got null"),
    (
        _with(RES, "spec.packages[0].name", ["db"]),
        "spec.packages[0].name",
        "expected a string, got a list",
    ),
    (
        _with(RES, "spec.packages[0].config", "x=1"),
        "spec.packages[0].config",
        "expected a map, got 'x=1'",
    ),
    (_with(RES, "spec.pinnedRevision", -1), "spec.pinnedRevision", "must be at least 1, got -1"),
    (_with(RES, "spec.pinnedRevision", 0), "spec.pinnedRevision", "must be at least 1, got 0"),
    (
        _with(RES, "spec.pinnedRevision", "3"),
        "spec.pinnedRevision",
        "expected a whole number, got '3'",
    ),
    (
        _with(RES, "spec.pinnedRevision", 1.5),
        "spec.pinnedRevision",
        "expected a whole number, got 1.5",
    ),
    (
        _with(RES, "spec.pinnedRevision", 10**5000),
        "spec.pinnedRevision",
        f"{INT64}, got a number of more than 64 bits",
    ),
    (
        _with(RES, "spec.approvedRevision", -2),
        "spec.approvedRevision",
        "must be at least 1, got -2",
    ),
    (_with(RES, "spec.paused", "false"), "spec.paused", "expected true or false, got 'false'"),
    (_with(RES, "spec.historyLimit", 0), "spec.historyLimit", "must be at least 1, got 0"),
    (
        _with(RES, "spec.progressDeadlineSeconds", float("inf")),
        "spec.progressDeadlineSeconds",
        "expected a whole number, got inf",
    ),
    (
        _with(RES, "spec.approval", "Sometimes"),
        "spec.approval",
        "must be one of Automatic, Manual, got 'Sometimes'",
    ),
    (
        _with(RES, "spec.deletionPolicy", "Keep"),
        "spec.deletionPolicy",
        "must be one of Delete, Orphan, got 'Keep'",
    ),
    (
        _with(RES, "spec.serviceAccount", {"name": "sa"}),
        "spec.serviceAccount.namespace",
        "required",
    ),
    (
        _with(RES, "spec.catalogSelector", ["tier=prod"]),
        "spec.catalogSelector",
        "expected a map, got a list",
    ),
    (
        _with(RES, "spec.catalogSelector.matchExpressions[0].key", None),
        "spec.catalogSelector.matchExpressions[0].key",
        "required",
    ),
    (
        _with(RES, "spec.catalogSelector.matchExpressions[0].values", "a"),
        "spec.catalogSelector.matchExpressions[0].values",
        "expected a list, got 'a'",
    ),
    (_with(RES, "spec", None), "spec", "required"),
    (
        _with(PO, "spec.package", "cert-manager"),
        "spec.package",
        "expected a map, got 'cert-manager'",
    ),
    (_with(PO, "spec.package.name", ""), "spec.package.name", "required"),
    (
        _annotated(PO, ANNOTATION_PINNED_REVISION, "²"),
        PIN,
        "expected a whole number from 1, got '²'",
    ),
    (
        _annotated(PO, ANNOTATION_RETRY, {"at": "now"}),
        f"metadata.annotations[{ANNOTATION_RETRY}]",
        "expected a string, got a map",
    ),
    ({"kind": "Resolution", "metadata": None, "spec": {}}, "metadata", "required"),
]


@pytest.mark.parametrize(
    ("obj", "path", "problem"), CLEAR_ERRORS, ids=[path for _, path, _ in CLEAR_ERRORS]
)
def test_bad_input_is_refused_naming_the_field(
    obj: dict[str, Any], path: str, problem: str
) -> None:
    error = _refused(obj)
    assert (error.path, error.problem) == (path, problem)
    assert str(error) == f"{path}: {problem}"
    _, reader = KINDS[str(obj["kind"])]
    with pytest.raises(FieldError, match=re.escape(str(error))):
        reader(obj)


def test_an_object_that_is_not_a_map_is_refused() -> None:
    for kind in KINDS:
        values: list[Any] = [[], "Resolution", None, 3]
        for value in values:
            with pytest.raises(FieldError, match=r"^object: expected a map"):
                parse_input(kind, value)


def test_messages_never_carry_a_whole_hostile_value() -> None:
    """A megabyte of terminal escapes in a field is cut and escaped in the message."""
    hostile = "\x1b]0;owned\x07" * 100_000
    message = str(_refused(_with(RES, "spec.approval", hostile)))
    assert len(message) < 200
    assert "\x1b" not in message
    assert "\x07" not in message
    key_message = str(_refused(_with(RES, "spec.catalogSelector.matchLabels", {hostile: 1})))
    assert len(key_message) < 300
    assert "\x1b" not in key_message


def test_deep_free_form_config_is_not_walked() -> None:
    """``config`` is the provisioner's to check: the view copies its top level only, so a
    config nested far beyond the recursion limit reads in no time."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    spec = from_resolution(_with(RES, "spec.packages[0].config", deep))
    assert spec.child_settings is not None
    assert spec.child_settings.package_config["db"] == deep


# ----------------------------------------------------------------------------- the hostile walk

HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    float("nan"),
    float("inf"),
    2**64,
    10**5000,
    "",
    "x",
    "-1",
    "\x1b[2J" * 1000,
    [],
    [None],
    [[]],
    [{}],
    {},
    {"a": None},
    {1: "x"},
    ("tuple",),
]

HOSTILE_TEXTS: list[Any] = [
    "",
    " 3",
    "3 ",
    "-1",
    "0",
    "+3",
    "1_0",
    "٣",
    "²",
    "9" * 5000,
    "true\x00",
    "\x1b[2J",
    "Manual ",
    "sha256:" + "AB" * 32,
    None,
    3,
    ["3"],
    {"3": "3"},
]

MEANINGFUL_ANNOTATIONS = [
    ANNOTATION_ADOPT_EXISTING,
    ANNOTATION_APPROVAL,
    ANNOTATION_APPROVED_REVISION,
    ANNOTATION_AUTO_ROLLBACK,
    ANNOTATION_DEPENDENCIES,
    ANNOTATION_HISTORY_LIMIT,
    ANNOTATION_PINNED_REVISION,
    ANNOTATION_RETRY,
]


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every node under ``value`` (map keys and list indices)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from _nodes(item, (*path, index))


def _replaced(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _read_or_refused(kind: str, obj: Any, where: str) -> None:
    """Both readers of ``kind`` read ``obj`` or refuse it with a FieldError (any other
    exception fails the test, naming the mutation)."""
    _, reader = KINDS[kind]
    for read in (lambda o: parse_input(kind, o), reader):
        refused: FieldError | None = None
        try:
            read(obj)
        except FieldError as error:
            refused = error
        except Exception as error:
            pytest.fail(f"{kind} {where}: {type(error).__name__}: {error}")
        if refused is not None:
            assert str(refused) == f"{refused.path}: {refused.problem}", where
            assert refused.path, where
            assert refused.problem, where


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_replaced_by_a_hostile_value(kind: str) -> None:
    make, _ = KINDS[kind]
    base = make()
    for path in _nodes(base):
        for index, value in enumerate(HOSTILE_VALUES):
            where = f"{path} = HOSTILE_VALUES[{index}]"
            _read_or_refused(kind, _replaced(base, path, value), where)
    for index, value in enumerate(HOSTILE_VALUES):
        _read_or_refused(kind, value, f"the object = HOSTILE_VALUES[{index}]")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_meaningful_annotation_set_to_a_hostile_text(kind: str) -> None:
    make, _ = KINDS[kind]
    for key in MEANINGFUL_ANNOTATIONS:
        for index, text in enumerate(HOSTILE_TEXTS):
            where = f"{key} = HOSTILE_TEXTS[{index}]"
            _read_or_refused(kind, _annotated(make(), key, text), where)


def test_hostile_annotation_texts_are_refused_not_misread() -> None:
    """Texts ``int()`` or ``str.isdigit()`` would take (signs, spaces, underscores, other
    scripts' digits, superscripts) are no revision number."""
    for text in (" 3", "3 ", "+3", "1_0", "٣", "²", "-1", "0"):
        with pytest.raises(FieldError, match=re.escape("[pivoter.io/pinned-revision]")):
            ClusterExtensionView.parse(_annotated(CE, ANNOTATION_PINNED_REVISION, text))


# ----------------------------------------------------------------------------- every CRD field


class _Recording(Mapping[str, Any]):
    """A map that notes the path of every key read from it (list indices written ``[]``)."""

    def __init__(self, data: Mapping[str, Any], path: str, seen: set[str]) -> None:
        self._data, self._path, self._seen = data, path, seen

    def _wrap(self, value: Any, path: str) -> Any:
        if isinstance(value, Mapping):
            return _Recording(value, path, self._seen)
        if isinstance(value, list):
            return [self._wrap(item, f"{path}[]") for item in value]
        return value

    def __getitem__(self, key: str) -> Any:
        path = f"{self._path}.{key}" if self._path else key
        self._seen.add(path)
        return self._wrap(self._data[key], path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _schema_paths(schema: Mapping[str, Any], path: str) -> Iterator[str]:
    """Every property path of an OpenAPI schema (into lists' items), free-form maps as one."""
    for name, sub in (schema.get("properties") or {}).items():
        yield f"{path}.{name}"
        items = sub.get("items") or {}
        if sub.get("type") == "array" and items.get("properties"):
            yield from _schema_paths(items, f"{path}.{name}[]")
        else:
            yield from _schema_paths(sub, f"{path}.{name}")


def _spec_schema(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]
    return spec


@pytest.mark.parametrize(
    ("kind", "crd"),
    [
        ("Resolution", api.resolution_crd),
        ("PlatformOperator", platform.platform_operator_crd),
        ("ClusterExtension", olmv1.cluster_extension_crd),
    ],
)
def test_the_view_reads_every_field_of_the_crds_spec(
    kind: str, crd: Callable[[], dict[str, Any]]
) -> None:
    """A field added to the CRD (or upstream's) fails here until its view reads it."""
    make, _ = KINDS[kind]
    seen: set[str] = set()
    parse_input(kind, _Recording(make(), "", seen))
    fields = set(_schema_paths(_spec_schema(crd()), "spec"))
    assert fields - seen == set()
