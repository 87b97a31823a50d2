"""Pure pieces of the OLM v1 input: how a ClusterExtension reads as a pivoter input, and OLM v1's
deprecation rules. (The cluster tests beside this file drive the same code end to end.)"""

from __future__ import annotations

from typing import Any

from pivoter.olmv1.deprecation import deprecation_conditions
from pivoter.olmv1.extensions import INVALID_CONFIGURATION, OLMV1_PROFILE, extension_spec
from pivoter.pivot import desired_child
from pivoter.resolvesets import InputRef
from resolver.catalog.model import Deprecation, DeprecationEntry
from resolver.resolveset import Entry


def _ce(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "namespace": "argocd",
        "source": {"sourceType": "Catalog", "catalog": {"packageName": "argocd-operator"}},
    }
    base.update(spec)
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": "argocd", "generation": 3, "uid": "u"},
        "spec": base,
    }


def test_defaults_are_olm_v1s() -> None:
    spec = extension_spec(_ce())
    assert spec.ref == InputRef("ClusterExtension", "argocd")
    (request,) = spec.requests
    assert (request.package, request.channels, request.version_range, request.upgrade_policy) == (
        "argocd-operator",
        (),
        "",
        "CatalogProvided",
    )
    assert spec.profile == OLMV1_PROFILE
    assert spec.catalog_kind == "ClusterCatalog"
    assert spec.service_account is None
    assert (spec.approval, spec.auto_rollback, spec.progress_deadline) == (
        "Automatic",
        False,
        43200.0,
    )
    assert spec.fallback_to_active
    assert spec.retry_token == "#3"  # a new generation is a retry


def test_upstream_fields_map_to_the_children() -> None:
    obj = _ce(
        serviceAccount={"name": "installer"},
        install={"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}},
        config={"configType": "Inline", "inline": {"watchNamespace": "team-a"}},
        progressDeadlineMinutes=15,
    )
    obj["spec"]["source"]["catalog"].update(
        {
            "version": ">=3.0, <3.6",
            "channels": ["preview"],
            "upgradeConstraintPolicy": "SelfCertified",
        }
    )
    spec = extension_spec(obj)
    assert spec.requests[0].channels == ("preview",)
    assert spec.requests[0].version_range == ">=3.0, <3.6"
    assert spec.requests[0].upgrade_policy == "SelfCertified"
    assert spec.service_account == {"namespace": "argocd", "name": "installer"}
    assert spec.progress_deadline == 900.0
    entry = Entry(
        "argocd-operator",
        "3.5.0",
        "argocd-operator.3.5.0",
        "preview",
        "c",
        "r/x:1",
        "core-rukpak-io-registry",
    )
    dependency = Entry(
        "db", "1.0.0", "db.1.0.0", "stable", "c", "r/db:1", "core-rukpak-io-registry"
    )
    own = desired_child(
        spec.ref,
        entry,
        revision=1,
        owner=obj,
        service_account=spec.service_account,
        primary=True,
        settings=spec.child_settings,
    )
    other = desired_child(
        spec.ref,
        dependency,
        revision=1,
        owner=obj,
        service_account=spec.service_account,
        settings=spec.child_settings,
    )
    assert own["metadata"]["name"] == "argocd"
    assert own["spec"]["config"] == {"installNamespace": "argocd", "watchNamespace": "team-a"}
    assert other["spec"]["config"] == {"installNamespace": "argocd"}
    assert own["spec"]["preflight"] == {"crdUpgradeSafety": {"disabled": True}}
    assert own["spec"]["serviceAccount"] == {"name": "installer", "namespace": "argocd"}


def test_opt_ins_are_annotations() -> None:
    obj = _ce()
    obj["metadata"]["annotations"] = {
        "pivoter.io/dependencies": "Install",
        "pivoter.io/approval": "Manual",
        "pivoter.io/auto-rollback": "true",
        "pivoter.io/history-limit": "3",
        "pivoter.io/pinned-revision": "2",
    }
    spec = extension_spec(obj)
    assert (spec.profile, spec.approval, spec.auto_rollback, spec.history_limit, spec.pinned) == (
        "pivoter",
        "Manual",
        True,
        3,
        2,
    )


def test_unknown_inline_keys_hold_the_extension_back() -> None:
    spec = extension_spec(
        _ce(config={"configType": "Inline", "inline": {"installNamespace": "elsewhere"}})
    )
    assert spec.paused
    assert 'unknown field "installNamespace"' in spec.extra[INVALID_CONFIGURATION]
    assert spec.child_settings is not None
    assert spec.child_settings.config_for(True) == {"installNamespace": "argocd"}


def test_deprecation_rules() -> None:
    deprecation = Deprecation(
        "p",
        (
            DeprecationEntry("olm.package", "", "package p is deprecated"),
            DeprecationEntry("olm.channel", "alpha", "alpha is gone"),
            DeprecationEntry("olm.bundle", "p.1.0.0", "1.0.0 is broken"),
        ),
    )
    found = {
        c[0]: c[1:]
        for c in deprecation_conditions(
            deprecation, has_catalog_data=True, channels=["stable"], installed_bundle="p.1.0.0"
        )
    }
    assert found["PackageDeprecated"] == ("True", "Deprecated", "package p is deprecated")
    assert found["ChannelDeprecated"] == ("False", "NotDeprecated", "channel not deprecated")
    assert found["BundleDeprecated"] == ("True", "Deprecated", "1.0.0 is broken")
    assert found["Deprecated"] == ("True", "Deprecated", "package p is deprecated\n1.0.0 is broken")
    # no channel requested: any deprecated channel counts; nothing installed: Absent
    found = {
        c[0]: c[1:]
        for c in deprecation_conditions(
            deprecation, has_catalog_data=True, channels=[], installed_bundle=""
        )
    }
    assert found["ChannelDeprecated"][0] == "True"
    assert found["BundleDeprecated"] == ("Unknown", "Absent", "no bundle installed yet")
    unknown = deprecation_conditions(
        None, has_catalog_data=False, channels=[], installed_bundle="x"
    )
    assert {c[2] for c in unknown} == {"DeprecationStatusUnknown"}
