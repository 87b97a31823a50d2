"""Templates expanded without pulling images match the catalogs opm rendered from them, and
``catalog test`` on a subset of real catalogs finds the defects checked by hand in
``docs/catalog-testing.md``. Also checks that the next upgrade ``catalog test`` predicts is the
bundle the resolver's default profile picks."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.catalog.model import Catalog
from resolver.channeltest.report import run_catalog_test
from resolver.channeltest.templates import BASIC, SEMVER, expand_file, find_templates
from resolver.profiles import get
from resolver.rules.inputs import CatalogInput, Installed, PackageRequest, ResolutionInput
from tests.channeltest.helpers import DATA, GOOD, load

TEMPLATES = DATA / "templates"
REAL = DATA / "real"


def _channels(catalog: Catalog, package: str) -> dict[str, list[tuple[str, str, tuple[str, ...]]]]:
    return {
        c.name: sorted((e.name, e.replaces, tuple(sorted(e.skips))) for e in c.entries)
        for c in catalog.channels
        if c.package == package
    }


@pytest.mark.parametrize(
    ("package", "legacy"),
    # clusterpulse was rendered by an older opm (skips per minor), kairos-operator by a current one
    [("clusterpulse", True), ("kairos-operator", False)],
)
def test_semver_template_expands_like_opm_rendered_it(package: str, legacy: bool) -> None:
    rendered = load(TEMPLATES / "ref" / package)
    (expanded,) = expand_file(
        str(TEMPLATES / package / "semver.yaml"), [], "semver.yaml", legacy_skips=legacy
    )
    assert expanded.schema == SEMVER
    assert expanded.findings == []
    assert _channels(expanded.catalog, package) == _channels(rendered, package)
    (pkg,) = expanded.catalog.packages
    assert pkg.default_channel == rendered.package(package).default_channel  # type: ignore[union-attr]


def test_basic_template_resolves_digests_through_a_reference_catalog(tmp_path: Path) -> None:
    rendered = load(TEMPLATES / "ref" / "kairos-operator")
    images = [b.image for b in rendered.bundles]
    text = "schema: olm.template.basic\nentries:\n"
    text += "- {schema: olm.package, name: kairos-operator, defaultChannel: candidate-v2}\n"
    text += "- schema: olm.channel\n  package: kairos-operator\n  name: candidate-v2\n  entries:\n"
    for c in rendered.channels:
        if c.name == "candidate-v2":
            for e in c.entries:
                text += f"  - {{name: {e.name}" + (
                    f", replaces: {e.replaces}" if e.replaces else ""
                )
                text += "}\n"
    for image in images:
        text += f"- {{schema: olm.bundle, image: '{image}'}}\n"
    text += "- {schema: olm.bundle, image: 'quay.io/x/unknown@sha256:" + "0" * 64 + "'}\n"
    path = tmp_path / "basic.yaml"
    path.write_text(text)
    assert find_templates(str(tmp_path)) == [str(path)]
    (expanded,) = expand_file(str(path), [rendered], "basic.yaml")
    assert expanded.schema == BASIC
    assert [f.code for f in expanded.findings] == ["template-unresolved"]
    assert {b.name for b in expanded.catalog.bundles} == {b.name for b in rendered.bundles}
    report = run_catalog_test(expanded.catalog)
    assert report.graph("kairos-operator", "candidate-v2") is not None


def test_real_subset_community() -> None:
    report = run_catalog_test(load(REAL / "community-operators-prod-v4.20"))
    found = {(f.code, f.package, f.channel, f.bundle) for f in report.findings}
    # aws-neuron-operator: 0.0.5 replaces 0.1.2, so 0.1.2 users are never upgraded and the
    # 0.0.x users who upgrade to 0.1.2 are stuck there (checked by hand in the catalog file)
    for channel in ("Fast", "Stable"):
        assert (
            "stranded-entry",
            "aws-neuron-operator",
            channel,
            "aws-neuron-operator.v0.1.2",
        ) in found
        assert (
            "no-path-to-head",
            "aws-neuron-operator",
            channel,
            "aws-neuron-operator.v0.0.1",
        ) in found
        assert (
            "downgrade-edge",
            "aws-neuron-operator",
            channel,
            "aws-neuron-operator.v0.0.5",
        ) in found
    # slurm-operator: 1.0.1-1 is a prerelease of 1.0.1 in semver, yet it replaces 1.0.1
    assert ("stranded-entry", "slurm-operator", "release-1.0", "slurm-operator.v1.0.1") in found
    assert not [f for f in report.findings if f.code.startswith("validation.")]


def test_real_subset_certified() -> None:
    report = run_catalog_test(load(REAL / "certified-operators-v4.20"))
    codes = {(f.code, f.package) for f in report.findings}
    # eda: skipRange '>=5.0.0' on 6.0.1 contains 6.0.1 itself
    assert ("skiprange-covers-newer", "eda-k8s-operator") in codes
    # habana: skipRange '>=1.9.0 <1.22.1-6-2' matches no bundle of the package
    assert ("skiprange-matches-nothing", "habana-ai-operator") in codes
    # visionone-containersecurity: 3.3.9-operator.1 (a prerelease of 3.3.9) replaces 3.3.9
    found = {(f.code, f.package, f.channel, f.bundle) for f in report.findings}
    for channel in ("alpha", "stable"):
        assert (
            "stranded-entry",
            "visionone-containersecurity",
            channel,
            "visionone-containersecurity.v3.3.9",
        ) in found
    assert {f.package for f in report.errors} == {"visionone-containersecurity"}


def _resolver_next(catalog: Catalog, package: str, channel: str, name: str, version: str) -> str:
    inp = ResolutionInput(
        catalogs=[CatalogInput("c", catalog)],
        requests=[PackageRequest(package, channels=(channel,))],
        installed=[Installed(name, package, version, catalog="c", channel=channel)],
    )
    (choice,) = [c for c in get("pivoter")(inp).choices if c.package == package]
    return choice.bundle.name


@pytest.mark.parametrize(
    "directory", [GOOD, REAL / "community-operators-prod-v4.20" / "aws-neuron-operator"]
)
def test_next_upgrade_is_what_the_default_profile_resolves(directory: Path) -> None:
    catalog = load(directory)
    report = run_catalog_test(catalog)
    compared = 0
    for g in report.graphs:
        for name in g.entries:
            expected = g.next_upgrade(name) or name
            version = str(g.versions[name])
            assert _resolver_next(catalog, g.package, g.channel, name, version) == expected
            compared += 1
    assert compared >= 3
