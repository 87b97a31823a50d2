"""The takeover rule as values (pivoter.inputs.takeover): the first revision pins what runs,
asks no approval, and nothing changes once the input has installed something itself."""

from __future__ import annotations

import pytest

from pivoter.apis.views import (
    ANNOTATION_TAKEOVER,
    ClusterExtensionView,
    FieldError,
    InstalledBundle,
    ResolutionView,
)
from pivoter.inputs.takeover import first_resolution, is_takeover
from resolver.resolveset import Entry, ResolveSet
from resolver.rules.inputs import Installed, PackageRequest

RUNNING = InstalledBundle("test", "test.v1.0.0", "1.0.0")


def _entry(package: str, bundle: str, version: str) -> Entry:
    return Entry(
        package=package,
        version=version,
        bundle=bundle,
        channel="stable",
        catalog="c",
        image=f"example.com/{bundle}",
        provisioner_class="core-rukpak-io-registry",
    )


def test_the_first_resolution_pins_the_running_bundle_and_takes_it_as_installed() -> None:
    requests = (PackageRequest("test", ("stable",), ">=0.1.0"), PackageRequest("other"))
    pinned, installed = first_resolution((RUNNING,), requests, [])
    assert pinned == (PackageRequest("test", ("stable",), "1.0.0"), PackageRequest("other"))
    assert installed == [Installed(name="test.v1.0.0", package="test", version="1.0.0")]


def test_once_anything_is_installed_the_takeover_changes_nothing() -> None:
    requests = (PackageRequest("test"),)
    mine = [Installed(name="test.v1.1.0", package="test", version="1.1.0")]
    assert first_resolution((RUNNING,), requests, mine) == (requests, mine)
    assert first_resolution((), requests, []) == (requests, [])


def test_only_the_first_revision_selecting_the_running_bundle_skips_approval() -> None:
    same = ResolveSet(entries=(_entry("test", "test.v1.0.0", "1.0.0"),))
    newer = ResolveSet(entries=(_entry("test", "test.v1.1.0", "1.1.0"),))
    assert is_takeover((RUNNING,), None, same)
    assert not is_takeover((RUNNING,), 1, same)  # something of the input is active already
    assert not is_takeover((RUNNING,), None, newer)
    assert not is_takeover((), None, same)


def _resolution(annotation: str) -> dict[str, object]:
    return {
        "metadata": {"name": "r", "annotations": {ANNOTATION_TAKEOVER: annotation}},
        "spec": {"packages": [{"name": "test"}]},
    }


def test_a_resolution_reads_its_takeover_annotation_strictly() -> None:
    view = ResolutionView.parse(_resolution(InstalledBundle.annotation_of([RUNNING])))
    assert view.takeover == (RUNNING,)
    one = '{"package": "test", "bundle": "test.v1.0.0", "version": "1.0.0"}'
    assert ResolutionView.parse(_resolution(one)).takeover == (RUNNING,)
    with pytest.raises(FieldError, match=ANNOTATION_TAKEOVER):
        ResolutionView.parse(_resolution('{"package": "test"}'))
    with pytest.raises(FieldError, match="expected JSON"):
        ResolutionView.parse(_resolution("[]"))
    with pytest.raises(FieldError, match="expected JSON"):
        ResolutionView.parse(_resolution("test.v1.0.0"))


def test_a_cluster_extension_takes_over_what_its_status_records() -> None:
    obj: dict[str, object] = {
        "metadata": {"name": "ce"},
        "spec": {
            "namespace": "ns",
            "source": {"sourceType": "Catalog", "catalog": {"packageName": "test"}},
        },
    }
    assert ClusterExtensionView.parse(obj).installed is None
    obj["status"] = {"install": {"bundle": {"name": "test.v1.0.0", "version": "1.0.0"}}}
    assert ClusterExtensionView.parse(obj).installed == RUNNING


def test_a_group_takeover_pins_every_bundle_and_needs_all_of_them_selected() -> None:
    dependency = InstalledBundle("dep", "dep.v2.0.0", "2.0.0")
    requests = (PackageRequest("test"), PackageRequest("dep"))
    pinned, installed = first_resolution((RUNNING, dependency), requests, [])
    assert [r.version_range for r in pinned] == ["1.0.0", "2.0.0"]
    assert {i.name for i in installed} == {"test.v1.0.0", "dep.v2.0.0"}
    both = ResolveSet(
        entries=(_entry("test", "test.v1.0.0", "1.0.0"), _entry("dep", "dep.v2.0.0", "2.0.0"))
    )
    assert is_takeover((RUNNING, dependency), None, both)
    only_one = ResolveSet(entries=(_entry("test", "test.v1.0.0", "1.0.0"),))
    assert not is_takeover((RUNNING, dependency), None, only_one)
