"""The ResolveSet document: schema, hashes, serialisation, installed-state reading."""

from __future__ import annotations

import json

import pytest
import yaml

from resolver import resolveset
from resolver.catalog.model import PROP_BUNDLE_MEDIATYPE, PROP_PACKAGE, Bundle, Property
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
