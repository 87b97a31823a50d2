"""The ResolveSet document: schema, hashes, serialisation, installed-state reading."""

from __future__ import annotations

import json

import pytest
import yaml

from resolver import resolveset
from resolver.catalog.model import (
    PROP_BUNDLE_MEDIATYPE,
    PROP_GVK,
    PROP_GVK_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    Bundle,
    Property,
)
from resolver.rules.inputs import Choice


def choice(
    package: str, version: str, catalog: str = "c", channel: str = "stable", **kw: str
) -> Choice:
    props = [Property(PROP_PACKAGE, {"packageName": package, "version": version})]
    if "mediatype" in kw:
        props.append(Property(PROP_BUNDLE_MEDIATYPE, kw["mediatype"]))
    bundle = Bundle(
        package, f"{package}.v{version}", f"quay.io/x/{package}:{version}", tuple(props)
    )
    return Choice(package, bundle, catalog, channel)


def test_selection_hash_ignores_order_catalog_and_channel() -> None:
    a = resolveset.from_choices([choice("a", "1.0.0"), choice("b", "2.0.0")], inputs_digest="x")
    b = resolveset.from_choices(
        [choice("b", "2.0.0", catalog="other"), choice("a", "1.0.0", channel="fast")],
        inputs_digest="y",
    )
    assert a.selection_hash == b.selection_hash
    c = resolveset.from_choices([choice("a", "1.0.1"), choice("b", "2.0.0")])
    assert c.selection_hash != a.selection_hash


@pytest.mark.parametrize(
    ("mediatype", "klass"),
    [
        (None, "core-rukpak-io-registry"),
        ("registry+v1", "core-rukpak-io-registry"),
        ("plain+v0", "core-rukpak-io-plain"),
        ("helm", "core-rukpak-io-helm"),
    ],
)
def test_provisioner_class_from_mediatype(mediatype: str | None, klass: str) -> None:
    kw = {"mediatype": mediatype} if mediatype else {}
    doc = resolveset.from_choices([choice("a", "1.0.0", **kw)]).to_dict()
    assert doc["bundles"][0]["provisionerClassName"] == klass


def test_yaml_and_json_round_trip_to_installed_state() -> None:
    rs = resolveset.from_choices(
        [choice("a", "1.0.0")], inputs_digest="sha256:abc", profile="pivoter"
    )
    for text in (rs.to_yaml(), rs.to_json()):
        back = resolveset.loads(text)
        assert back.selection_hash == rs.selection_hash
        assert back.inputs_digest == "sha256:abc"
        [inst] = back.installed()
        assert (inst.package, inst.name, inst.version, inst.catalog, inst.channel) == (
            "a",
            "a.v1.0.0",
            "1.0.0",
            "c",
            "stable",
        )
    doc = json.loads(rs.to_json())
    assert doc["apiVersion"] == "pivoter.io/v1alpha1"
    assert doc["kind"] == "ResolveSet"
    assert doc["metadata"]["selectionHash"] == rs.selection_hash
    assert yaml.safe_load(rs.to_yaml()) == doc


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "must be a mapping"),
        ("apiVersion: pivoter.io/v2\nkind: ResolveSet\n", "expected apiVersion"),
        ("apiVersion: pivoter.io/v1alpha1\nkind: ResolveSet\nbundles: {}\n", "must be a list"),
        (
            "apiVersion: pivoter.io/v1alpha1\nkind: ResolveSet\nbundles: [{package: a}]\n",
            "bundles[0] lacks bundle, version",
        ),
        ("{: bad", "not YAML or JSON"),
    ],
)
def test_malformed_documents_are_rejected(text: str, message: str) -> None:
    with pytest.raises(resolveset.ResolveSetError, match=message.replace("[", r"\[")):
        resolveset.loads(text)


def _with(c: Choice, *props: Property) -> Choice:
    bundle = c.bundle
    return Choice(
        c.package,
        Bundle(bundle.package, bundle.name, bundle.image, bundle.properties + props),
        c.catalog,
        c.channel,
    )


def test_requires_names_the_packages_of_the_set_that_meet_a_bundle_requirement() -> None:
    gvk = {"group": "db.example.com", "version": "v1", "kind": "Database"}
    db = _with(choice("db", "1.2.0"), Property(PROP_GVK, gvk))
    cache = choice("cache", "3.0.0")
    web = _with(
        choice("web", "1.0.0"),
        Property(PROP_GVK_REQUIRED, gvk),
        Property(PROP_PACKAGE_REQUIRED, {"packageName": "cache", "versionRange": ">=3.0.0"}),
        # met by nothing in the set (another input holds it): not an ordering edge
        Property(PROP_PACKAGE_REQUIRED, {"packageName": "elsewhere", "versionRange": ">=1.0.0"}),
    )
    # a range the set's bundle does not meet gives no edge either
    api = _with(
        choice("api", "1.0.0"),
        Property(PROP_PACKAGE_REQUIRED, {"packageName": "db", "versionRange": ">=2.0.0"}),
    )
    rs = resolveset.from_choices([web, db, cache, api])
    requires = {e.package: e.requires for e in rs.entries}
    assert requires == {"web": ("cache", "db"), "db": (), "cache": (), "api": ()}
    doc = rs.to_dict()
    assert [b.get("requires") for b in doc["bundles"]] == [None, None, None, ["cache", "db"]]
    back = resolveset.loads(rs.to_yaml())
    assert {e.package: e.requires for e in back.entries} == requires
    assert back.selection_hash == rs.selection_hash


def test_requires_must_be_a_list_of_package_names() -> None:
    doc = resolveset.from_choices([choice("a", "1.0.0")]).to_dict()
    doc["bundles"][0]["requires"] = "db"
    with pytest.raises(resolveset.ResolveSetError, match=r"bundles\[0\]\.requires"):
        resolveset.parse(doc)
