"""The pure parts of ``pivoter adopt --check`` and ``--backup``: each verdict from the objects
it is decided on (:mod:`pivoter.olmv0.check`), the table, the backup files
(:mod:`pivoter.olmv0.backup`) and the flags that may not go together. The same verdicts on a
real OLM v0 are in tests/olmv0/test_check_cluster.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.apis import olmv1
from pivoter.cli.adopt import human_check
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.main import main
from pivoter.olmv0.backup import BackupError, backup_name, render, write_backups
from pivoter.olmv0.check import (
    OLMV1_CRDS,
    AdoptionCheck,
    AdoptionVerdict,
    crd_reasons,
    extension_check,
    holders,
    ordered,
    record_check,
    subscription_check,
)
from pivoter.olmv0.mapping import resolution_for, resolution_name
from pivoter.olmv0.survey import InstalledOperator

NS = "operators"
CSV = "kube-green.v0.5.2"


def _csv(phase: str = "Succeeded") -> dict[str, Any]:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": CSV,
            "namespace": NS,
            "annotations": {"olm.targetNamespaces": ""},
            "managedFields": [{"manager": "olm"}],
        },
        "spec": {
            "version": "0.5.2",
            "installModes": [{"type": "AllNamespaces", "supported": True}],
        },
        "status": {"phase": phase},
    }


def _operator(*, selector: bool = False, phase: str = "Succeeded") -> InstalledOperator:
    group_spec: dict[str, Any] = {"selector": {"matchLabels": {"a": "b"}}} if selector else {}
    return InstalledOperator(
        namespace=NS,
        subscription={
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "kube-green", "namespace": NS, "managedFields": [{"m": 1}]},
            "spec": {"name": "kube-green", "channel": "alpha"},
            "status": {"installedCSV": CSV, "state": "AtLatestKnown"},
        },
        csv=_csv(phase),
        operator_groups=({"metadata": {"name": "og", "namespace": NS}, "spec": group_spec},),
        install_plans=(
            {"metadata": {"name": "install-b", "namespace": NS}, "status": {"phase": "Complete"}},
            {"metadata": {"name": "install-a", "namespace": NS}, "status": {"phase": "Complete"}},
        ),
    )


def _record(step: str, *, message: str = "") -> dict[str, Any]:
    name = resolution_name(NS, "kube-green")
    res = resolution_for(_operator(), name=name, adoption_step=step)
    if message:
        res["metadata"]["annotations"]["olmv0.pivoter.io/adoption-message"] = message
    return res


def _extension(
    *,
    installed: bool = True,
    adopt: bool = True,
    status: dict[str, Any] | None = None,
    package: Any = "argocd",
) -> dict[str, Any]:
    annotations = {"pivoter.io/adopt-existing": "true"} if adopt else {}
    body: dict[str, Any] = {
        "apiVersion": olmv1.API_VERSION,
        "kind": "ClusterExtension",
        "metadata": {"name": "argocd", "annotations": annotations},
        "spec": {
            "namespace": "argocd",
            "serviceAccount": {"name": "installer"},
            "source": {"sourceType": "Catalog", "catalog": {"packageName": package}},
        },
        "status": dict(status or {}),
    }
    if installed:
        body["status"]["install"] = {"bundle": {"name": "argocd.v0.6.0", "version": "0.6.0"}}
    return body


# -- Subscriptions -------------------------------------------------------------------------------


def test_an_installed_operator_at_rest_is_adoptable_and_says_what_is_checked_later() -> None:
    entry = subscription_check(_operator(), {})
    assert entry.verdict is AdoptionVerdict.ADOPTABLE
    assert entry.reasons == ()
    assert entry.resolution == resolution_name(NS, "kube-green")
    assert (entry.kind, entry.name, entry.package, entry.installed) == (
        "Subscription",
        f"{NS}/kube-green",
        "kube-green",
        CSV,
    )
    assert "checked at the adoption's Planning step" in entry.notes[0]


def test_a_refused_operator_carries_every_refusal_of_refusals_py() -> None:
    entry = subscription_check(_operator(selector=True, phase="Installing"), {})
    assert entry.verdict is AdoptionVerdict.REFUSED
    assert any("picks its target namespaces with a label selector" in r for r in entry.reasons)
    assert any(f"CSV {CSV} is in phase Installing" in r for r in entry.reasons)
    assert entry.notes == ()


def test_namespace_reasons_refuse_and_namespace_notes_do_not() -> None:
    refused = subscription_check(_operator(), {}, namespace_reasons=["namespace has stray CSVs"])
    assert refused.verdict is AdoptionVerdict.REFUSED
    assert refused.reasons == ("namespace has stray CSVs",)
    noted = subscription_check(_operator(), {}, namespace_notes=["adopt them one by one"])
    assert noted.verdict is AdoptionVerdict.ADOPTABLE
    assert noted.notes[0] == "adopt them one by one"


def test_another_input_installing_the_package_is_a_conflict_with_the_refusals_too() -> None:
    found = {"kube-green": frozenset({"ClusterExtension/green", "Resolution/mine"})}
    entry = subscription_check(_operator(selector=True), found)
    assert entry.verdict is AdoptionVerdict.CONFLICT
    assert entry.reasons[0].startswith("ClusterExtension/green installs package kube-green")
    assert entry.reasons[1].startswith("Resolution/mine installs package kube-green")
    assert any("label selector" in r for r in entry.reasons[2:])


def test_the_adoptions_own_resolution_is_not_a_conflict() -> None:
    own = f"Resolution/{resolution_name(NS, 'kube-green')}"
    entry = subscription_check(_operator(), {"kube-green": frozenset({own})})
    assert entry.verdict is AdoptionVerdict.ADOPTABLE


def test_a_started_adoption_is_in_progress_and_a_resubscribed_one_conflicts() -> None:
    started = subscription_check(_operator(), {}, resolution=_record("Planning"))
    assert started.verdict is AdoptionVerdict.IN_PROGRESS
    assert "at step Planning" in started.reasons[0]
    assert f"pivoter adopt --subscription {NS}/kube-green (or" in started.reasons[0]
    again = subscription_check(_operator(), {}, resolution=_record("Adopted"))
    assert again.verdict is AdoptionVerdict.CONFLICT
    assert "yet the Subscription exists again" in again.reasons[0]


def test_a_resolution_by_the_adoptions_name_that_records_something_else_conflicts() -> None:
    other = _record("Planning")
    other["metadata"]["annotations"]["olmv0.pivoter.io/subscription"] = json.dumps(
        {"namespace": NS, "name": "another"}
    )
    entry = subscription_check(_operator(), {}, resolution=other)
    assert entry.verdict is AdoptionVerdict.CONFLICT
    assert "is not the adoption of Subscription" in entry.reasons[0]


def test_a_record_alone_is_adopted_or_in_progress_with_its_message() -> None:
    adopted = record_check(_record("Adopted"))
    assert adopted.verdict is AdoptionVerdict.ADOPTED
    assert (adopted.name, adopted.package, adopted.installed) == (
        f"{NS}/kube-green",
        "kube-green",
        CSV,
    )
    assert f"records the adoption of {CSV} as Adopted" in adopted.reasons[0]
    moving = record_check(_record("Installing", message="waiting for the child"))
    assert moving.verdict is AdoptionVerdict.IN_PROGRESS
    assert "at step Installing: waiting for the child" in moving.reasons[0]
    assert "finishes it (the Subscription is gone already" in moving.reasons[0]


# -- who holds a package -------------------------------------------------------------------------


def test_holders_come_from_selections_children_and_installed_extensions() -> None:
    inputs: dict[str, list[dict[str, Any]]] = {
        "Resolution": [
            {"metadata": {"name": "r"}, "status": {"selection": [{"package": "etcd"}]}},
            {"metadata": {"name": "fresh"}, "status": {}},
        ],
        "PlatformOperator": [{"metadata": {"name": "po"}, "status": {"activeRevision": "1"}}],
        "ClusterExtension": [_extension(), _extension(installed=False, package="quay")],
    }
    children = [
        {
            "metadata": {
                "annotations": {
                    "pivoter.io/input": "PlatformOperator/po",
                    "pivoter.io/package": "cert-manager",
                }
            }
        },
        {"metadata": {"annotations": {"pivoter.io/package": "orphan"}}},
    ]
    assert holders(inputs, children) == {
        "etcd": frozenset({"Resolution/r"}),
        "cert-manager": frozenset({"PlatformOperator/po"}),
        "argocd": frozenset({"ClusterExtension/argocd"}),
    }


# -- ClusterExtensions ---------------------------------------------------------------------------


def test_an_installed_annotated_extension_on_pivoters_crds_is_adoptable() -> None:
    entry = extension_check(_extension(), {}, crds=[])
    assert entry.verdict is AdoptionVerdict.ADOPTABLE
    assert (entry.kind, entry.name, entry.package, entry.installed) == (
        "ClusterExtension",
        "argocd",
        "argocd",
        "argocd.v0.6.0 (0.6.0)",
    )
    assert not any("one thing missing" in n for n in entry.notes)


def test_the_annotation_as_the_one_thing_missing_is_said_and_still_adoptable() -> None:
    entry = extension_check(_extension(adopt=False), {}, crds=[])
    assert entry.verdict is AdoptionVerdict.ADOPTABLE
    assert entry.notes[0].startswith("the one thing missing: add the annotation pivoter.io/adopt")


def test_an_extension_with_nothing_installed_is_refused_with_every_reason() -> None:
    crds = ["the CRD is OLM v1's own"]
    entry = extension_check(_extension(installed=False, adopt=False), {}, crds=crds)
    assert entry.verdict is AdoptionVerdict.REFUSED
    assert entry.installed == ""
    assert "recorded no installed bundle" in entry.reasons[0]
    assert entry.reasons[1] == "the CRD is OLM v1's own"
    assert "pivoter.io/adopt-existing" in entry.reasons[2]


def test_an_extension_pivoter_manages_or_is_pivoting_is_adopted_or_in_progress() -> None:
    adopted = extension_check(_extension(status={"activeRevision": 2}), {}, crds=["x"])
    assert adopted.verdict is AdoptionVerdict.ADOPTED
    assert "ResolveSet revision 2 is active" in adopted.reasons[0]
    moving = extension_check(
        _extension(status={"lastAttemptedRevision": 1, "pivot": {"phase": "Applying"}}),
        {},
        crds=[],
    )
    assert moving.verdict is AdoptionVerdict.IN_PROGRESS
    assert "revision 1" in moving.reasons[0]


def test_an_extension_conflicts_with_another_input_of_its_package_not_with_itself() -> None:
    found = {"argocd": frozenset({"ClusterExtension/argocd", "Resolution/argo"})}
    entry = extension_check(_extension(), found, crds=[])
    assert entry.verdict is AdoptionVerdict.CONFLICT
    assert entry.reasons == (
        "Resolution/argo installs package argocd already: two installers would fight over its "
        "objects; remove one of them first",
    )


def test_an_extension_pivoter_cannot_read_is_refused_naming_the_field() -> None:
    entry = extension_check(_extension(package=["a", "list"]), {}, crds=[])
    assert entry.verdict is AdoptionVerdict.REFUSED
    assert "spec.source.catalog.packageName" in entry.reasons[0]


def test_crd_reasons_want_both_crds_and_pivoters_annotation() -> None:
    ours = {"metadata": {"annotations": {olmv1.ANNOTATION_CRD_SOURCE: "x"}}}
    assert crd_reasons(dict.fromkeys(OLMV1_CRDS, ours)) == []
    extensions, catalogs = OLMV1_CRDS
    reasons = crd_reasons({extensions: {"metadata": {}}, catalogs: None})
    assert len(reasons) == 2
    assert any(f"the CRD {catalogs} is not installed" in r for r in reasons)
    assert any(f"the CRD {extensions} is OLM v1's own" in r for r in reasons)


# -- order, table, exit --------------------------------------------------------------------------


def _entry(verdict: AdoptionVerdict, name: str) -> AdoptionCheck:
    return AdoptionCheck("Subscription", name, "p", "", verdict, ("why",), ("note",))


def test_entries_are_ordered_by_what_needs_a_person_first_and_only_two_verdicts_block() -> None:
    entries = [_entry(v, v.value) for v in AdoptionVerdict]
    assert [e.verdict.value for e in ordered(entries)] == [
        "Conflict",
        "Refused",
        "InProgress",
        "Adopted",
        "Adoptable",
    ]
    assert {v.value for v in AdoptionVerdict if v.blocks} == {"Refused", "Conflict"}


def test_the_table_has_a_row_per_operator_its_reasons_and_a_count() -> None:
    text = human_check(
        [_entry(AdoptionVerdict.REFUSED, "ns/a"), _entry(AdoptionVerdict.ADOPTED, "ns/b")]
    )
    lines = text.splitlines()
    assert lines[0].split() == ["VERDICT", "KIND", "NAME", "PACKAGE", "INSTALLED"]
    assert lines[1].split() == ["Refused", "Subscription", "ns/a", "p", "-"]
    assert lines[2:4] == ["    - why", "    note: note"]
    assert lines[-1] == "1 Refused, 1 Adopted"
    assert human_check([]).startswith("nothing to check")


def test_to_dict_is_what_json_prints() -> None:
    entry = subscription_check(_operator(), {})
    data = entry.to_dict()
    assert data["verdict"] == "Adoptable"
    assert data["resolution"] == resolution_name(NS, "kube-green")
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize(
    "argv",
    [
        ["adopt", "--all"],
        ["adopt", "--subscription", "ns/s", "--check", "--dry-run"],
    ],
)
def test_flags_that_do_not_go_together_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == ExitCode.USAGE
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("extra", [["--check", "--undo"], ["--undo", "--backup", "dir"]])
def test_check_undo_and_backup_exclude_each_other(extra: list[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "adopt",
                "--subscription",
                "ns/s",
                *[str(tmp_path / e) if e == "dir" else e for e in extra],
            ]
        )
    assert exc.value.code == ExitCode.USAGE


# -- backups -------------------------------------------------------------------------------------


def test_a_backup_is_every_object_in_order_without_managed_fields() -> None:
    text = render(_operator())
    assert text.startswith(f"# pivoter adopt --backup: OLM v0's objects of Subscription {NS}/")
    documents = list(yaml.safe_load_all(text))
    assert [(d.get("kind", ""), d["metadata"]["name"]) for d in documents] == [
        ("Subscription", "kube-green"),
        ("", "og"),
        ("ClusterServiceVersion", CSV),
        ("", "install-a"),
        ("", "install-b"),
    ]
    assert not any("managedFields" in d["metadata"] for d in documents)
    assert documents[2]["spec"] == _csv()["spec"]


def test_backups_are_written_one_file_per_subscription_for_the_owner_only(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "backups"
    (written,) = write_backups(directory, [_operator()])
    assert (
        written == directory / backup_name(NS, "kube-green") == directory / f"{NS}-kube-green.yaml"
    )
    assert stat.S_IMODE(os.stat(written).st_mode) == 0o600
    assert written.read_text() == render(_operator())
    assert sorted(p.name for p in directory.iterdir()) == [written.name]  # no temporary left


def test_a_directory_that_cannot_be_written_is_a_backup_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(BackupError, match=f"cannot create the backup directory {blocker}/dir"):
        write_backups(blocker / "dir", [_operator()])
    (tmp_path / "d" / f"{NS}-kube-green.yaml").mkdir(parents=True)  # the file's place is taken
    with pytest.raises(BackupError, match=f"cannot write the backup {tmp_path}/d/{NS}-kube"):
        write_backups(tmp_path / "d", [_operator()])
